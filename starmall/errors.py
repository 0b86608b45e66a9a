"""Errors a service raises and the API renders as ``{"code", "message", "detail"}``.

Services raise these (never DRF exceptions) so that a view, a Celery task and an admin action
can all call the same service; ``starmall.api.exceptions.exception_handler`` turns them into
the error format of API.md. Each app adds its own subclasses in ``exceptions.py``.
"""

from __future__ import annotations

from typing import Any


class ShopError(Exception):
    """Base class: ``code`` (snake_case, API.md), HTTP ``status``, Chinese ``message`` (shown to the customer), ``detail``."""

    code = "error"
    status = 400
    message = "请求无法处理。"

    def __init__(self, message: str | None = None, **detail: Any) -> None:
        self.message = message or self.message
        self.detail = detail
        super().__init__(self.message)


class InvalidInput(ShopError):
    """Input that is well-formed JSON but not acceptable (400 ``invalid``)."""

    code = "invalid"
    status = 400
    message = "输入有误，请检查后重试。"


class NotFound(ShopError):
    """The object does not exist or belongs to someone else (404 ``not_found``)."""

    code = "not_found"
    status = 404
    message = "内容不存在。"


class InvalidState(ShopError):
    """The object is not in a state that allows this operation (409 ``invalid_state``)."""

    code = "invalid_state"
    status = 409
    message = "当前状态不允许此操作。"


class WechatUnavailable(ShopError):
    """WeChat did not answer, or answered with a system error (503 ``wechat_unavailable``)."""

    code = "wechat_unavailable"
    status = 503
    message = "暂时无法连接微信，请稍后再试。"


class LimitExceeded(ShopError):
    """A per-customer cap was reached (409 ``limit_exceeded``, API.md Additions): unpaid orders
    (``MAX_UNPAID_ORDERS``), one unpaid consultation, a flash-sale or coupon limit."""

    code = "limit_exceeded"
    status = 409
    message = "已达到购买上限。"


class ServiceUnavailable(ShopError):
    """A part the request needs (Redis: tokens, drafts, throttles) is down (503 ``service_unavailable``).

    Raised for ``starmall.errors.BACKEND_ERRORS`` by the API's exception handler and by
    ``starmall.api.middleware.ServiceUnavailableMiddleware``; answered with ``Retry-After``.
    """

    code = "service_unavailable"
    status = 503
    message = "服务暂时不可用，请稍后再试。"
    retry_after_seconds = 5


class DatabaseBusy(ServiceUnavailable):
    """The database gave the transaction up twice because of other transactions' locks (a
    deadlock or serialization failure; ``starmall.locking``): nothing was kept, the same
    request may be sent again at once (503 ``service_unavailable``, ``Retry-After: 1``)."""

    message = "系统繁忙，请稍后再试。"
    retry_after_seconds = 1

    def __init__(self, message: str | None = None, **detail: Any) -> None:
        super().__init__(message, **({"retry_after_seconds": self.retry_after_seconds} | detail))


def backend_errors() -> tuple[type[BaseException], ...]:
    """The exceptions meaning "Redis (cache, tokens, broker) is unreachable or timed out"."""
    from django_redis.exceptions import ConnectionInterrupted
    from kombu.exceptions import OperationalError
    from redis.exceptions import ConnectionError, TimeoutError

    return (ConnectionError, TimeoutError, ConnectionInterrupted, OperationalError)
