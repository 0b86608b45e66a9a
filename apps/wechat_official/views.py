"""``GET, POST /wechat/official``: WeChat's official-account server calls (``server.py``)."""

from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from apps.wechat_official.server import official_request


@csrf_exempt
@require_http_methods(["GET", "POST"])
def official_server(request):
    """The signed echo (GET) or the reply to a message or event (POST); 403 if not signed."""
    answer = official_request(method=request.method, params=request.GET.dict(),
                              body=request.body if request.method == "POST" else b"")
    return HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)
