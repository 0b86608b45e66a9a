"""DRF exception handler producing API.md's error format for every 4xx/5xx answer."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from starmall import messages
from starmall.errors import DatabaseBusy, ServiceUnavailable, ShopError, backend_errors
from starmall.locking import is_lock_conflict

logger = logging.getLogger(__name__)

_DRF_CODES = {
    drf.NotAuthenticated: ("unauthenticated", 401, messages.UNAUTHENTICATED),
    drf.AuthenticationFailed: ("unauthenticated", 401, messages.UNAUTHENTICATED),
    drf.PermissionDenied: ("forbidden", 403, messages.FORBIDDEN),
    drf.NotFound: ("not_found", 404, messages.NOT_FOUND),
    drf.MethodNotAllowed: ("method_not_allowed", 405, messages.METHOD_NOT_ALLOWED),
    drf.NotAcceptable: ("not_acceptable", 406, messages.NOT_ACCEPTABLE),
    drf.UnsupportedMediaType: ("unsupported_media_type", 415, messages.UNSUPPORTED_MEDIA_TYPE),
    drf.Throttled: ("throttled", 429, messages.THROTTLED),
    drf.ParseError: ("invalid", 400, messages.MALFORMED_BODY),
}


def error_body(code: str, message: str, detail: dict | None = None) -> dict:
    """API.md's error format (the ASGI gates answer refusals with it too)."""
    return {"code": code, "message": message, "detail": detail or {}}


def error_response(code: str, status: int, message: str, detail: dict | None = None) -> Response:
    """A response in API.md's error format."""
    return Response(error_body(code, message, detail), status=status)


def exception_handler(exc, context):
    """Render ShopError, DRF and Django exceptions as ``{"code", "message", "detail"}``.

    A Redis error (tokens, drafts, throttles: ``starmall.errors.backend_errors``) is 503
    ``service_unavailable``; so is a lock conflict the database rolled a transaction back for
    (``starmall.locking.is_lock_conflict``: a deadlock or serialization failure that no retry
    cleared), as ``DatabaseBusy``. Anything else propagates (a 500 that is logged), as in DRF's
    own handler.
    """
    if isinstance(exc, backend_errors()):
        exc = ServiceUnavailable()
    elif is_lock_conflict(exc):
        logger.warning("503 busy: %s", str(exc).splitlines()[0])
        exc = DatabaseBusy()
    if isinstance(exc, ShopError):
        set_rollback()
        response = error_response(exc.code, exc.status, exc.message, exc.detail)
        if isinstance(exc, ServiceUnavailable):
            response["Retry-After"] = str(exc.retry_after_seconds)
        return response
    if isinstance(exc, RequestDataTooBig):  # a body read past Django's limit (no Content-Length)
        set_rollback()
        return error_response(
            "payload_too_large", 413, messages.PAYLOAD_TOO_LARGE, {"max_bytes": settings.API_MAX_BODY_BYTES}
        )
    if isinstance(exc, Http404):
        exc = drf.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = drf.PermissionDenied()
    if isinstance(exc, drf.ValidationError):
        set_rollback()
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        return error_response("invalid", 400, messages.INVALID_INPUT, detail)
    for cls, (code, status, message) in _DRF_CODES.items():
        if isinstance(exc, cls):
            set_rollback()
            response = error_response(code, status, message)
            if isinstance(exc, drf.Throttled) and exc.wait:
                response["Retry-After"] = str(int(exc.wait))
                response.data["detail"] = {"retry_after_seconds": int(exc.wait)}
            if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
                response["WWW-Authenticate"] = 'Bearer realm="api"'
            return response
    if isinstance(exc, drf.APIException):
        set_rollback()
        return error_response(exc.default_code, exc.status_code, str(exc.detail))
    return None
