"""Request plumbing shared by the API and the admin: the 503 answer when Redis is down, and the
client address used by the admin lockout (django-axes)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, JsonResponse

from starmall.errors import ServiceUnavailable, backend_errors

logger = logging.getLogger(__name__)


def service_unavailable_response(exc: BaseException) -> JsonResponse:
    """503 ``service_unavailable`` in API.md's error format, with ``Retry-After``."""
    error = ServiceUnavailable()
    response = JsonResponse({"code": error.code, "message": error.message, "detail": {}}, status=error.status)
    response["Retry-After"] = str(error.retry_after_seconds)
    return response


class ServiceUnavailableMiddleware:
    """Turn a Redis error that escaped a view (outside DRF's exception handler) into a JSON 503.

    DRF views get the same answer from ``starmall.api.exceptions.exception_handler``; this
    covers plain Django views and anything below them, so no request gets an HTML 500 because
    Redis is down.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        if isinstance(exception, backend_errors()):
            logger.warning("503 for %s %s: %s: %s", request.method, request.path, type(exception).__name__, exception)
            return service_unavailable_response(exception)
        return None


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: ``REMOTE_ADDR``, unless ``TRUSTED_PROXY_COUNT`` (default 0) proxies
    in front each append to ``X-Forwarded-For``; then the address the outermost trusted proxy
    saw (the N-th entry from the end, as DRF's ``NUM_PROXIES``). A client-sent header is never
    believed beyond that."""
    count = getattr(settings, "TRUSTED_PROXY_COUNT", 0)
    remote = request.META.get("REMOTE_ADDR")
    if count <= 0:
        return remote
    forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
    if not forwarded:
        return remote
    return forwarded[-min(count, len(forwarded))]
