"""Distribution endpoints (API.md "Distribution"): thin views over the services."""

from __future__ import annotations

import logging

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.distribution import codes, referral, selectors, withdrawals
from apps.distribution.api import serializers as s
from apps.payments import notifications
from apps.payments.models import InvalidNotificationDay
from starmall.api import fields
from starmall.api.middleware import content_length
from starmall.api.pagination import PAGE_PARAMETERS, PageNumberPagination
from starmall.api.schema import errors

logger = logging.getLogger(__name__)

PAGE = PAGE_PARAMETERS
MAX_NOTIFY_BYTES = 64 * 1024


def _page(name: str, entry) -> serializers.Serializer:
    return inline_serializer(
        name,
        {
            "count": fields.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": entry(many=True),
        },
    )


def _paginated(view, request, rows, serializer):
    paginator = PageNumberPagination()
    page = paginator.paginate_queryset(rows, request, view=view)
    return paginator.get_paginated_response(serializer(page, many=True).data)


class ReferrerView(APIView):
    @extend_schema(
        request=s.CodeInSerializer,
        responses={
            200: s.ReferrerOutSerializer,
            **errors(
                e400="invalid (one's own code, or a loop)",
                e404="not_found (unknown code)",
                e409="invalid_state (already bound)",
            ),
        },
    )
    def post(self, request):
        data = s.CodeInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        referrer = referral.referrer_bind(customer_id=request.user.pk, code=data.validated_data["code"])
        return Response({"referrer": {"nickname": referrer.customer.nickname}})


class DistributionView(APIView):
    @extend_schema(responses={200: s.DistributionSerializer})
    def get(self, request):
        me = referral.distributor_for(customer_id=request.user.pk)
        me.refresh_from_db()
        level1, level2 = selectors.team_counts(distributor=me)
        referrer = me.referrer.customer.nickname if me.referrer_id else None
        return Response(
            s.DistributionSerializer(
                {
                    "referral_code": me.referral_code,
                    "referrer": {"nickname": referrer} if referrer is not None else None,
                    "available_fen": me.available_fen,
                    "frozen_fen": me.frozen_fen,
                    "withdrawn_fen": me.withdrawn_fen,
                    "team_level1": level1,
                    "team_level2": level2,
                }
            ).data
        )


class CommissionListView(APIView):
    @extend_schema(
        parameters=[s.CommissionQuerySerializer, *PAGE],
        responses={
            200: _page("CommissionPage", s.CommissionSerializer),
            **errors(e400="invalid (unknown status)", e404="not_found (no such page)"),
        },
    )
    def get(self, request):
        query = s.CommissionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        wanted = query.validated_data.get("status")
        me = referral.distributor_for(customer_id=request.user.pk)
        return _paginated(self, request, selectors.commissions(distributor=me, status=wanted), s.CommissionSerializer)


class TeamView(APIView):
    @extend_schema(
        parameters=[s.TeamQuerySerializer, *PAGE],
        responses={
            200: _page("TeamPage", s.TeamMemberSerializer),
            **errors(e400="invalid (level not 1 or 2)", e404="not_found (no such page)"),
        },
    )
    def get(self, request):
        query = s.TeamQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        level = query.validated_data["level"]
        me = referral.distributor_for(customer_id=request.user.pk)
        return _paginated(self, request, selectors.team(distributor=me, level=level), s.TeamMemberSerializer)


class CodeView(APIView):
    @extend_schema(
        request=s.CodeRequestSerializer,
        responses={
            200: s.CodeOutSerializer,
            **errors(
                e400="invalid (kind; id missing for product/teacher)",
                e404="not_found (no such product or teacher)",
                e503="wechat_unavailable",
            ),
        },
    )
    def post(self, request):
        data = s.CodeRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(
            codes.promotion_code(
                customer_id=request.user.pk, kind=data.validated_data["kind"], object_id=data.validated_data.get("id")
            )
        )


class WithdrawalListView(APIView):
    @extend_schema(
        parameters=PAGE,
        responses={200: _page("WithdrawalPage", s.WithdrawalSerializer), **errors(e404="not_found (no such page)")},
    )
    def get(self, request):
        me = referral.distributor_for(customer_id=request.user.pk)
        return _paginated(self, request, selectors.withdrawals(distributor=me), s.WithdrawalSerializer)

    @extend_schema(
        request=s.WithdrawalInSerializer,
        responses={
            201: s.WithdrawalCreatedSerializer,
            **errors(
                e400="invalid (below WITHDRAW_MIN_FEN)",
                e409="insufficient_balance (more than available), limit_exceeded (another withdrawal not settled)",
            ),
        },
    )
    def post(self, request):
        data = s.WithdrawalInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        withdrawal = withdrawals.withdrawal_request(
            customer_id=request.user.pk, amount_fen=data.validated_data["amount_fen"]
        )
        return Response(s.WithdrawalCreatedSerializer(withdrawal).data, status=status.HTTP_201_CREATED)


@extend_schema(
    summary="WeChat Pay v3 merchant-transfer notification (called by WeChat)",
    description=(
        "Checked and applied through payments' table of WeChat callbacks "
        "(apps.payments.notifications): one audit row (微信通知, kind transfer) per delivery."
    ),
    request={"application/json": OpenApiTypes.OBJECT},
    responses={
        204: OpenApiResponse(description="handled (applied, or a duplicate of one applied before)"),
        **errors(
            e400="FAIL (WeChat v3's code; message in English): bad signature, stale timestamp, undecryptable "
            "resource, an out_bill_no that is not ours or a wrong transfer_amount (any non-2xx makes "
            "WeChat send it again)",
            e413="FAIL: body too large",
            e503="service_unavailable (the database gave the transaction up twice; WeChat sends again)",
        ),
    },
    auth=[],
)
@api_view(["POST"])
@authentication_classes([])
@permission_classes([AllowAny])
def transfer_notify(request):
    callback = notifications.TRANSFER_RESULT
    if content_length(request) > MAX_NOTIFY_BYTES or len(request.body) > MAX_NOTIFY_BYTES:
        InvalidNotificationDay.count_one(kind=callback.kind)
        return HttpResponse(callback.fail("body too large"), status=413, content_type=callback.content_type)
    answer = notifications.notification_handle(callback, request.body, request.headers)
    return HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)
