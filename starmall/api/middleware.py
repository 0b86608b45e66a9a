"""Request plumbing shared by the API and the admin: the 413 answer for bodies over the limit,
the 503 answer when Redis is down, the client address (throttles, admin lockout), and JSON for
what Django itself refuses under ``/api/`` (:class:`ApiRefusalJsonMiddleware`).

Django refuses a body past ``DATA_UPLOAD_MAX_MEMORY_SIZE`` only when something reads it, and in
HTML (``RequestDataTooBig``); :class:`BodySizeLimitMiddleware` checks ``Content-Length`` before
anything reads the body. It leaves out WeChat's notification URLs (WeChat's XML and their own
smaller limit: ``apps.payments.api.views``) and ``multipart/form-data`` uploads, which Django
streams to disk (their endpoint checks the file size).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, JsonResponse

from starmall.errors import DatabaseBusy, ServiceUnavailable, backend_errors
from starmall.locking import is_lock_conflict
from starmall.messages import FORBIDDEN, INVALID_INPUT, PAYLOAD_TOO_LARGE
from starmall.proxies import client_address

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
NOTIFY_PREFIX = "/api/v1/payments/wechat/"


def content_length(request) -> int:
    """The request's declared ``Content-Length`` in bytes (0 when absent or unreadable)."""
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


def payload_too_large(max_bytes: int) -> JsonResponse:
    """413 in API.md's error format."""
    return JsonResponse(
        {"code": "payload_too_large", "message": PAYLOAD_TOO_LARGE, "detail": {"max_bytes": max_bytes}},
        status=413,
        json_dumps_params={"ensure_ascii": False},
    )


class BodySizeLimitMiddleware:
    """413 ``payload_too_large`` for API bodies over ``settings.API_MAX_BODY_BYTES`` bytes."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        path = request.path_info
        if (
            path.startswith(API_PREFIX)
            and not path.startswith(NOTIFY_PREFIX)
            and not request.META.get("CONTENT_TYPE", "").startswith("multipart/form-data")
            and content_length(request) > settings.API_MAX_BODY_BYTES
        ):
            return payload_too_large(settings.API_MAX_BODY_BYTES)
        return self.get_response(request)


def service_unavailable_response(exc: BaseException) -> JsonResponse:
    """503 ``service_unavailable`` in API.md's error format, with ``Retry-After``: Redis down,
    or (``DatabaseBusy``) a lock conflict the database rolled the transaction back for."""
    error = DatabaseBusy() if isinstance(exc, DatabaseBusy) or is_lock_conflict(exc) else ServiceUnavailable()
    response = JsonResponse({"code": error.code, "message": error.message, "detail": error.detail}, status=error.status)
    response["Retry-After"] = str(error.retry_after_seconds)
    return response


class ServiceUnavailableMiddleware:
    """Turn a Redis error or a database lock conflict that escaped a view (outside DRF's
    exception handler) into a JSON 503.

    DRF views get the same answer from ``starmall.api.exceptions.exception_handler``; this
    covers plain Django views and anything below them, so no request gets an HTML 500 because
    Redis is down or the database gave a transaction up (``starmall.locking``).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        if isinstance(exception, backend_errors() + (DatabaseBusy,)) or is_lock_conflict(exception):
            logger.warning("503 for %s %s: %s: %s", request.method, request.path, type(exception).__name__, exception)
            return service_unavailable_response(exception)
        return None


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: ``REMOTE_ADDR``, unless that is one of ``TRUSTED_PROXIES``; then
    the first ``X-Forwarded-For`` entry from the right that is not a trusted proxy
    (:func:`starmall.proxies.client_address`, uvicorn's own rule). A client-sent header is
    never believed beyond the proxies listed; with none (the default) it is ignored."""
    return client_address(
        request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"), tuple(settings.TRUSTED_PROXIES)
    )


class ClientAddressMiddleware:
    """``REMOTE_ADDR`` becomes :func:`client_ip` for everything after it (DRF's throttles with
    ``NUM_PROXIES = 0``, django-axes, logs).

    Behind uvicorn with trusted proxies the address is already the client's (its proxy headers
    use the same list) and nothing changes; this covers servers that do not rewrite it (Django's
    test client, ``runserver``), so the app never depends on which server runs it.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        request.META["REMOTE_ADDR"] = client_ip(request)
        return self.get_response(request)


class ApiRefusalJsonMiddleware:
    """Outermost: a 400 or 403 that Django's own machinery answered under ``/api/`` (a ``Host`` not
    in ALLOWED_HOSTS, another SuspiciousOperation, a CSRF refusal) in HTML — the debug page under
    ``make run`` — becomes API.md's ``{"code", "message", "detail"}``. WeChat's notification URLs
    keep their own answers; JSON answers pass as they are."""

    REFUSALS = {400: ("invalid", INVALID_INPUT), 403: ("forbidden", FORBIDDEN)}

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        response = self.get_response(request)
        refusal = self.REFUSALS.get(response.status_code)
        if (
            refusal is None
            or not request.path.startswith(API_PREFIX)
            or request.path.startswith(NOTIFY_PREFIX)
            or response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        code, message = refusal
        body = {"code": code, "message": message, "detail": {}}
        return JsonResponse(body, status=response.status_code, json_dumps_params={"ensure_ascii": False})
