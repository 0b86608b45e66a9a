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


class PhoneCodeInvalid(ShopError):
    """The getPhoneNumber ``code`` was refused by WeChat: invalid, expired or used (400 ``invalid``)."""

    code = "invalid"
    status = 400
    message = "手机号授权已失效，请重新授权。"

    def __init__(self, message: str | None = None, **detail) -> None:
        super().__init__(message, code=["手机号授权已失效，请重新授权"], **detail)


class SmsCodeInvalid(ShopError):
    """A wrong, expired or already used SMS code (400 ``invalid`` with ``detail.sms_code``)."""

    code = "invalid"
    status = 400
    message = "验证码错误或已过期。"
    field_message = "验证码错误或已过期"  # detail.sms_code

    def __init__(self, message: str | None = None, **detail) -> None:
        super().__init__(message, sms_code=[self.field_message], **detail)


class SmsCodeTooManyTries(SmsCodeInvalid):
    """The code was checked wrong ``SMS_CODE_MAX_ATTEMPTS`` times: refused even when right, a new
    code must be requested. The same answer as SmsCodeInvalid (400 ``invalid``, the same
    message) with ``detail.sms_code`` saying to request a new code."""

    field_message = "验证码错误次数过多，请重新获取"


class SmsThrottled(ShopError):
    """Too many SMS codes: one a minute, ``SMS_CODES_PER_DAY`` a day per phone and per client
    address (429 ``throttled``)."""

    code = "throttled"
    status = 429
    message = "验证码发送过于频繁，请稍后再试。"
