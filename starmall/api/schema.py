"""OpenAPI helpers: the error body of API.md and per-endpoint error responses."""

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

# Largest id an API accepts: bigger numbers are refused as invalid instead of overflowing
# SQLite's or PostgreSQL's integer columns (and stay exact in JavaScript).
MAX_ID = 2**53


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="snake_case, e.g. insufficient_stock")
    message = serializers.CharField(help_text="human text")
    detail = serializers.DictField(help_text="field errors (invalid) or context, e.g. sku_id")


def errors(**described: str) -> dict[int, OpenApiResponse]:
    """``errors(e409="insufficient_stock, slot_unavailable")`` -> {409: OpenApiResponse(...)}."""
    return {int(key[1:]): OpenApiResponse(ErrorSerializer, description=text) for key, text in described.items()}
