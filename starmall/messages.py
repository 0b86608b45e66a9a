"""Chinese ``message`` texts of the API layer (API.md: shown to the customer as they are).

Errors raised by services carry their own messages (``starmall/errors.py``, each app's
``exceptions.py``); these are the answers the API layer itself gives. DRF's field errors in
``detail`` are Chinese too (``LANGUAGE_CODE = "zh-hans"``).
"""

UNAUTHENTICATED = "请先登录（令牌缺失、无效或已过期）。"
FORBIDDEN = "没有权限进行此操作。"
NOT_FOUND = "内容不存在。"
API_NOT_FOUND = "接口不存在。"
METHOD_NOT_ALLOWED = "不支持该请求方法。"
NOT_ACCEPTABLE = "无法按所要求的格式返回。"
UNSUPPORTED_MEDIA_TYPE = "请以 JSON（application/json）格式提交。"
THROTTLED = "请求过于频繁，请稍后再试。"
MALFORMED_BODY = "请求内容不是有效的 JSON。"
INVALID_INPUT = "输入有误，请检查后重试。"
PAYLOAD_TOO_LARGE = "请求内容过大。"
