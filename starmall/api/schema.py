"""OpenAPI helpers: the error body of API.md, per-endpoint error responses, and the schema class
that declares every error status an operation can answer (``ShopAutoSchema``)."""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import permissions, serializers

# Largest id an API accepts: bigger numbers are refused as invalid instead of overflowing
# SQLite's or PostgreSQL's integer columns (and stay exact in JavaScript).
MAX_ID = 2**53


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="snake_case, e.g. insufficient_stock")
    message = serializers.CharField(help_text="Chinese text the mini-program may show as it is")
    detail = serializers.DictField(help_text="field errors (invalid) or context, e.g. sku_id")


def errors(**described: str) -> dict[int, OpenApiResponse]:
    """``errors(e409="insufficient_stock, slot_unavailable")`` -> {409: OpenApiResponse(...)}."""
    return {int(key[1:]): OpenApiResponse(ErrorSerializer, description=text) for key, text in described.items()}


class ShopAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, plus the error answers every operation of this API can give.

    What a view declares stays; added (API.md error body) where the operation can answer it:
    400 ``invalid`` (a request body or query parameters), 401 ``unauthenticated`` (a token is
    required), 404 ``not_found`` (a path parameter, or a paginated list's ``page``), 413
    ``payload_too_large`` (every POST/PUT/PATCH: the body limit applies to bodiless ones too), 415
    ``unsupported_media_type`` (a JSON request body), 429
    ``throttled`` (a throttle applies), 503 ``service_unavailable`` (needs Redis: tokens,
    throttles). XML endpoints (WeChat's notifications) are left as declared.
    """

    def _map_basic_serializer(self, serializer, direction):
        """A response states no ``pattern``: input rules (a mobile phone) do not bind rows stored
        before them."""
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "response":
            for field in schema.get("properties", {}).values():
                field.pop("pattern", None)
        return schema

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response" or any("application/xml" in (r.get("content") or {}) for r in responses.values()):
            return responses
        for status, text in self._error_statuses().items():
            if str(status) not in responses:
                responses[str(status)] = self._get_response_for_code(
                    OpenApiResponse(ErrorSerializer, description=text), str(status)
                )
        return responses

    def _error_statuses(self) -> dict[int, str]:
        has_body = self.method in ("POST", "PUT", "PATCH") and bool(self._get_request_body())
        params = self._get_parameters()
        in_query = any(p.get("in") == "query" for p in params)
        in_path = any(p.get("in") == "path" for p in params)
        private = permissions.AllowAny not in [p.__class__ for p in self.view.get_permissions()]
        throttled = bool(self.view.get_throttles())
        paginated = (
            self.method == "GET"
            and getattr(self.view, "pagination_class", None) is not None
            and hasattr(self.view, "get_queryset")
            and self._is_list_view()
        )
        statuses: dict[int, str] = {}
        if has_body or in_query:
            statuses[400] = "invalid"
        if private:
            statuses[401] = "unauthenticated (token missing, unknown, expired or revoked)"
        if in_path or paginated:
            statuses[404] = "not_found"
        if has_body or self.method in ("POST", "PUT", "PATCH"):  # the body limit applies to every write
            statuses[413] = "payload_too_large"
        if has_body:
            statuses[415] = "unsupported_media_type"
        if throttled:
            statuses[429] = "throttled (Retry-After header, detail.retry_after_seconds)"
        if private or throttled:
            statuses[503] = "service_unavailable (Redis down, or the database busy; Retry-After)"
        return statuses
