"""``GET, POST /wechat/official``: WeChat's official-account server calls (``server.py``).

A DRF view only so that the OpenAPI schema (drf-spectacular) states it, as it states WeChat
Pay's notification URLs: no token, no CSRF (WeChat signs), no content negotiation (WeChat's
Accept header decides nothing: the answer is the echo, ``success`` or a reply XML).
"""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from apps.wechat_official.server import MAX_BODY_BYTES, official_request
from starmall.api.schema import errors


class _AnswerAsIs(BaseContentNegotiation):
    """The view answers with its own HttpResponse; no Accept header can turn it into a 406."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


SIGNED = [
    OpenApiParameter(name, str, description=text)
    for name, text in (
        ("signature", "sha1 of the sorted WECHAT_OFFICIAL_TOKEN, timestamp and nonce"),
        ("timestamp", "WeChat's Unix time"),
        ("nonce", "WeChat's random number"),
    )
]
SIGNATURE_403 = (
    "forbidden: the signature (or safe mode's msg_signature) does not verify, the timestamp is "
    "more than 300 s from the shop's clock, or the nonce was already used"
)
REDIS_503 = "service_unavailable: the nonce memory (Redis) is down; WeChat sends the call again"


class OfficialServerView(APIView):
    """The signed echo (GET) or the reply to a message or event (POST); 403 if not signed."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _AnswerAsIs
    http_method_names = ["get", "post"]

    @extend_schema(
        summary="WeChat official-account server: URL check (called by WeChat)",
        parameters=[*SIGNED, OpenApiParameter("echostr", str, description="echoed as is when signed")],
        responses={
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="echostr"),
            **errors(e403=SIGNATURE_403, e503=REDIS_503),
        },
        auth=[],
    )
    def get(self, request):
        return self._answer(request, b"")

    @extend_schema(
        summary="WeChat official-account server: messages and events (called by WeChat)",
        description=(
            "A message or event as WeChat's XML, plaintext or safe mode (encrypt_type=aes, "
            "msg_signature) as WECHAT_OFFICIAL_MODE allows; stored once, answered with the reply "
            "rule's XML or `success` (also for a message with a field out of range, not stored)."
        ),
        parameters=[
            *SIGNED,
            OpenApiParameter("openid", str, description="the sender (WeChat adds it)"),
            OpenApiParameter("encrypt_type", str, description="aes in safe mode"),
            OpenApiParameter("msg_signature", str, description="safe mode: the signature of Encrypt"),
        ],
        request={"text/xml": OpenApiTypes.STR},
        responses={
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="success (nothing to say)"),
            (200, "application/xml"): OpenApiResponse(
                OpenApiTypes.STR, description="the reply XML (encrypted in safe mode)"
            ),
            **errors(
                e400="invalid: not a WeChat message (unreadable, a DTD, no sender)",
                e403=SIGNATURE_403 + ", or a plaintext / encrypted message the mode refuses",
                e413=f"payload_too_large: over {MAX_BODY_BYTES} bytes",
                e503=REDIS_503,
            ),
        },
        auth=[],
    )
    def post(self, request):
        return self._answer(request, request.body)

    def _answer(self, request, body: bytes) -> HttpResponse:
        answer = official_request(method=request.method, params=request.query_params.dict(), body=body)
        return HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)


official_server = OfficialServerView.as_view()
