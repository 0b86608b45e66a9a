"""Request-size guard for the API: a body over the limit is a 413 JSON answer, read by nobody.

Django refuses a body past ``DATA_UPLOAD_MAX_MEMORY_SIZE`` only when something reads it, and then
with an HTML 400 (``RequestDataTooBig``). This middleware looks at ``Content-Length`` before any
view, parser or middleware reads the body and answers API.md's
``{"code": "payload_too_large", "message", "detail": {"max_bytes"}}`` with status 413.

Not covered here: WeChat's notification URLs (``/api/v1/payments/wechat/``) answer in WeChat's
XML and apply their own smaller limit (``apps.payments.api.views``), and ``multipart/form-data``
uploads, whose files Django streams to disk (their endpoint checks the file size).
"""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse

from starmall.messages import PAYLOAD_TOO_LARGE

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
        status=413, json_dumps_params={"ensure_ascii": False},
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
