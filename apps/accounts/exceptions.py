"""Errors of login and the customer wallet."""

from starmall.errors import ShopError


class LoginCodeInvalid(ShopError):
    """``wx.login`` code rejected by WeChat: invalid (40029), used (40163) or blocked (40226)."""

    code = "invalid"
    status = 400
    message = "The WeChat login code is invalid, expired or already used; call wx.login again."


class LoginThrottled(ShopError):
    """WeChat rate-limited code2session (45011)."""

    code = "throttled"
    status = 429
    message = "WeChat is rate-limiting logins; try again in a minute."


class InsufficientBalance(ShopError):
    """The customer's balance does not cover the amount (409 ``insufficient_balance``)."""

    code = "insufficient_balance"
    status = 409
    message = "Your balance is not enough to pay this order."
