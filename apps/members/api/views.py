"""The members API (API.md "Members (会员)"): thin views over ``apps.members.selectors``.
Buying a card is payments' (``apps.payments.api.member_cards``): it goes through WeChat Pay."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.members import selectors
from apps.members.api.serializers import GrowthEntrySerializer, MemberCardSerializer, MemberSerializer
from starmall.api import fields
from starmall.api.pagination import PAGE_PARAMETERS, PageNumberPagination
from starmall.api.schema import errors

GROWTH_PAGE = inline_serializer(
    "GrowthPage",
    {
        "count": fields.IntegerField(),
        "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True),
        "results": GrowthEntrySerializer(many=True),
    },
)


class MemberView(APIView):
    """``GET /me/member``: the caller's level, growth, next level and paid membership."""

    @extend_schema(responses={200: MemberSerializer, **errors()})
    def get(self, request):
        return Response(MemberSerializer(selectors.member_overview(customer_id=request.user.pk)).data)


class GrowthListView(APIView):
    """``GET /me/growth``: the caller's growth ledger, newest first, paginated."""

    @extend_schema(
        parameters=PAGE_PARAMETERS,
        responses={200: GROWTH_PAGE, **errors(e401="unauthenticated", e404="not_found (no such page)")},
    )
    def get(self, request):
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(selectors.growth_events(customer_id=request.user.pk), request, view=self)
        return paginator.get_paginated_response(GrowthEntrySerializer(page, many=True).data)


class MemberCardListView(APIView):
    """``GET /member-cards``: the cards on sale, in their order."""

    @extend_schema(responses={200: MemberCardSerializer(many=True), **errors()})
    def get(self, request):
        return Response(MemberCardSerializer(selectors.cards_on_sale(), many=True).data)
