"""The customer's ledgers (API.md Additions): ``GET /me/points`` and ``GET /me/balance``.

``reason`` is the ledger's code (``pay``, ``refund``, ``spend``, ``return``, ``award``,
``revoke``, ``adjust``: what a client branches on); ``reason_text`` is its Chinese label
(支付订单, 退款, 抵扣订单, 订单取消退回, 消费奖励, 退款扣回奖励, 后台调整) to show as it is.
"""

from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.views import APIView

from apps.accounts import selectors
from apps.accounts.models import WalletEvent
from starmall.api import fields
from starmall.api.pagination import PAGE_PARAMETERS, PageNumberPagination
from starmall.api.schema import errors


def _time(value):
    return timezone.localtime(value).isoformat() if value else None


class PointsEntrySerializer(serializers.Serializer):
    change = fields.IntegerField(source="amount", help_text="points; + earned/returned, - spent/revoked")
    reason = fields.CharField(help_text="code: pay, refund, spend, return, award, revoke, adjust")
    reason_text = fields.CharField(source="get_reason_display", help_text="Chinese label")
    state = fields.CharField(help_text="available, frozen (award not yet spendable), void (order cancelled/refunded)")
    order_no = fields.CharField(allow_blank=True)
    created_at = serializers.SerializerMethodField()
    available_at = serializers.SerializerMethodField(
        help_text="when the points became / become spendable; null: frozen until the order completes"
    )

    def get_created_at(self, entry) -> str:
        return _time(entry.created_at)

    def get_available_at(self, entry) -> str | None:
        return None if entry.state == WalletEvent.State.VOID else _time(entry.available_at)


class BalanceEntrySerializer(serializers.Serializer):
    change_fen = fields.IntegerField(source="amount", help_text="fen; + refunded/added, - paid")
    reason = fields.CharField(help_text="code: pay, refund, adjust")
    reason_text = fields.CharField(source="get_reason_display", help_text="Chinese label")
    order_no = fields.CharField(allow_blank=True)
    created_at = serializers.SerializerMethodField()

    def get_created_at(self, entry) -> str:
        return _time(entry.created_at)


def _page_schema(name: str, totals: dict, entry) -> serializers.Serializer:
    return inline_serializer(
        name,
        {
            **totals,
            "count": fields.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": entry(many=True),
        },
    )


class _LedgerView(APIView):
    kind = ""
    entry_serializer = serializers.Serializer

    def totals(self, customer) -> dict:
        raise NotImplementedError

    def get(self, request):
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(
            selectors.wallet_ledger(customer_id=request.user.pk, kind=self.kind), request, view=self
        )
        response = paginator.get_paginated_response(self.entry_serializer(page, many=True).data)
        response.data = {**self.totals(request.user), **response.data}
        return response


class PointsLedgerView(_LedgerView):
    """``{"points" (spendable), "frozen", count, next, previous, results}``, newest first."""

    kind = WalletEvent.Kind.POINTS
    entry_serializer = PointsEntrySerializer

    def totals(self, customer) -> dict:
        customer.refresh_from_db(fields=["points"])
        return {"points": customer.points, "frozen": selectors.points_frozen(customer_id=customer.pk)}

    @extend_schema(
        parameters=PAGE_PARAMETERS,
        responses={
            200: _page_schema(
                "PointsLedger",
                {"points": fields.IntegerField(), "frozen": fields.IntegerField()},
                PointsEntrySerializer,
            ),
            **errors(e401="unauthenticated", e404="not_found (no such page)"),
        },
    )
    def get(self, request):
        return super().get(request)


class BalanceLedgerView(_LedgerView):
    """``{"balance_fen", count, next, previous, results}``, newest first."""

    kind = WalletEvent.Kind.BALANCE
    entry_serializer = BalanceEntrySerializer

    def totals(self, customer) -> dict:
        customer.refresh_from_db(fields=["balance_fen"])
        return {"balance_fen": customer.balance_fen}

    @extend_schema(
        parameters=PAGE_PARAMETERS,
        responses={
            200: _page_schema("BalanceLedger", {"balance_fen": fields.IntegerField()}, BalanceEntrySerializer),
            **errors(e401="unauthenticated", e404="not_found (no such page)"),
        },
    )
    def get(self, request):
        return super().get(request)
