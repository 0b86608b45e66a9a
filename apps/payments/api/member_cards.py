"""Buying a paid-membership card (API.md "Members (会员)"): a thin view over
``apps.payments.member_cards`` (paid through WeChat like a recharge)."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.members.models import CardPurchase
from apps.payments import member_cards
from apps.payments.api.serializers import PayParamsSerializer
from starmall.api import fields
from starmall.api.schema import errors


class CardPurchaseCreatedSerializer(fields.ModelSerializer):
    pay_params = PayParamsSerializer(help_text="wx.requestPayment parameters")

    class Meta:
        model = CardPurchase
        fields = ["purchase_no", "pay_fen", "status", "pay_params"]


class MemberCardBuyView(APIView):
    @extend_schema(
        request=None,
        responses={
            201: CardPurchaseCreatedSerializer,
            **errors(e404="not_found (no such card on sale)", e503="wechat_unavailable"),
        },
    )
    def post(self, request, card_id: int):
        purchase, params = member_cards.card_buy(customer=request.user, card_id=card_id)
        purchase.pay_params = params
        return Response(CardPurchaseCreatedSerializer(purchase).data, status=status.HTTP_201_CREATED)
