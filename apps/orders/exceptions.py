from starmall import messages
from starmall.errors import ShopError


class OrderKeyExpired(ShopError):
    """The order_key is unknown, expired or not the caller's (410 ``order_key_expired``)."""

    code = "order_key_expired"
    status = 410
    message = "订单确认已过期，请重新确认订单。"


class CouponUnavailable(ShopError):
    """The coupon is used, expired, not the caller's or the order is too small (409)."""

    code = "coupon_unavailable"
    status = 409
    message = "该优惠券不可用于此订单。"


class CustomerInactive(ShopError):
    """The customer was deactivated after the token was read (401, as token auth answers)."""

    code = "unauthenticated"
    status = 401
    message = messages.UNAUTHENTICATED
