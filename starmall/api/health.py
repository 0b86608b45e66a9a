"""``GET /healthz`` (the database and Redis answer, or 503 naming the part that failed) and the
API's catch-all 404."""

from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from starmall import messages
from starmall.heartbeats import shop_heartbeats


@require_GET
def healthz(request):
    """200 ``{"status": "ok", "database": "ok", "redis": "ok", "worker": "ok", "beat": "ok"}``;
    503 with ``"error"`` parts.

    ``worker`` and ``beat`` are the SHOP's (``starmall.heartbeats``: a worker, and the beat that
    sends, reported within 60 s, on whatever machine; ``"missing"`` otherwise, ``"unknown"`` when
    Redis is down) and the same on every web node; they never change the status code, which is
    about this node's own database and Redis, so a load balancer never drops a web node because
    a worker elsewhere died.
    """
    result = {"status": "ok", "database": "ok", "redis": "ok"}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:  # any driver error means "not healthy"
        result["database"] = "error"
    try:
        cache.set("healthz", "1", timeout=5)
        if cache.get("healthz") != "1":
            raise RuntimeError("redis answered with something else")
    except Exception:
        result["redis"] = "error"
    failed = "error" in result.values()
    result.update(shop_heartbeats() if result["redis"] == "ok" else {"worker": "unknown", "beat": "unknown"})
    if failed:
        result["status"] = "error"
        return JsonResponse(result, status=503)
    return JsonResponse(result)


@csrf_exempt  # a POST to an unknown path is a 404 too, not CSRF's HTML 403 (no session here)
def api_not_found(request):
    """Unknown path under /api/ (or a path parameter no converter accepts): 404 in API.md's
    error format, not Django's HTML page (nor, with DEBUG on, its page listing every URL)."""
    return JsonResponse(
        {"code": "not_found", "message": messages.API_NOT_FOUND, "detail": {"path": request.path}},
        status=404,
        json_dumps_params={"ensure_ascii": False},
    )
