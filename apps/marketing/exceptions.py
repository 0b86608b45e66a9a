"""Errors of flash sales; the codes are API.md's (``limit_exceeded`` lives in starmall.errors)."""

from starmall.errors import InvalidState, LimitExceeded


class FlashSaleNotLive(InvalidState):
    """The sale has not started, has ended or is paused (409 ``invalid_state``)."""

    message = "秒杀活动不在进行中。"


class FlashSaleLimitExceeded(LimitExceeded):
    """The customer would hold more than ``limit_per_customer`` units (409 ``limit_exceeded``)."""

    message = "已超过本场秒杀的限购数量。"


class CouponLimitExceeded(LimitExceeded):
    """The customer received the template's ``per_customer`` coupons, or none are left
    (409 ``limit_exceeded``)."""

    message = "已达到领取上限。"
