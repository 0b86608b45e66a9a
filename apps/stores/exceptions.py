"""Errors of self-pickup; codes are API.md's."""

from starmall.errors import InvalidState, ShopError


class Forbidden(ShopError):
    """The staff login may not do this (403 ``forbidden``): no verify permission, or another store's order."""

    code = "forbidden"
    status = 403
    message = "没有权限。"


class AlreadyVerified(InvalidState):
    """The code was verified before (409 ``invalid_state``); the message says when and by whom."""
