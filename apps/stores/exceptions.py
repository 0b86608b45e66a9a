"""Errors of self-pickup; codes are API.md's."""

from starmall.errors import InvalidState, ShopError


class Forbidden(ShopError):
    """The staff login may not do this (403 ``forbidden``): no verify permission, or another store's order."""

    code = "forbidden"
    status = 403
    message = "没有权限。"


class AlreadyVerified(InvalidState):
    """The code was verified before (409 ``invalid_state``); the message says when and by whom."""


class VerifyThrottled(ShopError):
    """The staff login typed ``PICKUP_VERIFY_FAILURES_PER_HOUR`` wrong codes this hour (429
    ``throttled``): every check is refused, a right code too, until the next hour
    (``detail.retry_at``, Beijing time); ``apps.stores.verify_throttle``."""

    code = "throttled"
    status = 429
    message = "核销码输错次数过多，请稍后再试。"
