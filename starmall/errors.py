"""Errors a service raises and the API renders as ``{"code", "message", "detail"}``.

Services raise these (never DRF exceptions) so that a view, a Celery task and an admin action
can all call the same service; ``starmall.api.exceptions.exception_handler`` turns them into
the error format of API.md. Each app adds its own subclasses in ``exceptions.py``.
"""

from __future__ import annotations

from typing import Any


class ShopError(Exception):
    """Base class: ``code`` (snake_case, API.md), HTTP ``status``, human ``message``, ``detail``."""

    code = "error"
    status = 400
    message = "The request could not be handled."

    def __init__(self, message: str | None = None, **detail: Any) -> None:
        self.message = message or self.message
        self.detail = detail
        super().__init__(self.message)


class InvalidInput(ShopError):
    """Input that is well-formed JSON but not acceptable (400 ``invalid``)."""

    code = "invalid"
    status = 400
    message = "Invalid input."


class NotFound(ShopError):
    """The object does not exist or belongs to someone else (404 ``not_found``)."""

    code = "not_found"
    status = 404
    message = "Not found."


class InvalidState(ShopError):
    """The object is not in a state that allows this operation (409 ``invalid_state``)."""

    code = "invalid_state"
    status = 409
    message = "The operation is not allowed in the current state."


class LimitExceeded(ShopError):
    """A per-customer cap or a flash-sale limit would be passed (409 ``limit_exceeded``, API.md)."""

    code = "limit_exceeded"
    status = 409
    message = "已超过限购数量。"


class WechatUnavailable(ShopError):
    """WeChat did not answer, or answered with a system error (503 ``wechat_unavailable``)."""

    code = "wechat_unavailable"
    status = 503
    message = "WeChat is not reachable right now; please try again."
