"""Errors of login and the customer wallet."""

from starmall.errors import ShopError


class LoginCodeInvalid(ShopError):
    """``wx.login`` code rejected by WeChat: invalid (40029), used (40163) or blocked (40226)."""

    code = "invalid"
    status = 400
    message = "微信登录凭证无效、已过期或已被使用，请重新登录。"


class LoginThrottled(ShopError):
    """WeChat rate-limited code2session (45011)."""

    code = "throttled"
    status = 429
    message = "登录过于频繁，请一分钟后再试。"


class InsufficientBalance(ShopError):
    """The customer's balance does not cover the amount (409 ``insufficient_balance``)."""

    code = "insufficient_balance"
    status = 409
    message = "余额不足，无法支付此订单。"
