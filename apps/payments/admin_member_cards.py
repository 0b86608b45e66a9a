"""The member card purchases' refund action (退款到微信): through the same service and permission
as every refund approval (``member_cards.card_refund_request``: 财务 any amount, 客服 up to
``SERVICE_REFUND_LIMIT_FEN``), after the money confirmation page. Here, at payments' level,
because it refunds through WeChat: the members app's CardPurchaseAdmin is registered again with
the action added."""

from django.contrib import admin, messages
from django.db.models import Sum
from django.shortcuts import render
from django.urls import reverse

from apps.members.admin import CardPurchaseAdmin
from apps.members.models import CardPurchase
from apps.payments import member_cards, staff_limits
from starmall.admin import Outcome, report
from starmall.admin_money import yuan
from starmall.errors import ShopError


class CardPurchaseRefundAdmin(CardPurchaseAdmin):
    actions = ["refund"]
    money_actions = ["refund"]  # who may: apps/backoffice/roles.py MONEY_ACTIONS (role_hints.html)
    list_before_template = change_form_outer_before_template = "admin/starmall/role_hints.html"

    def has_refund_permission(self, request):
        return staff_limits.may_approve_refund(request.user)

    @admin.action(description="退款所选会员卡（退回微信，缩短会员期）", permissions=["refund"])
    def refund(self, request, queryset):
        """A confirmation page (what is left of each, the days it takes back); only its confirm
        button asks for the refunds, each all that is left of its purchase."""
        selected = list(queryset.select_related("customer").order_by("pk"))
        if not request.POST.get("confirm"):
            return self._refund_confirm(request, selected)
        outcomes = []
        for purchase in selected:
            try:
                refund = member_cards.card_refund_request(purchase_id=purchase.pk, user=request.user)
            except ShopError as exc:
                outcomes.append(Outcome(purchase.purchase_no, messages.WARNING, f"未退款：{exc.message}"))
                continue
            outcomes.append(
                Outcome(
                    purchase.purchase_no,
                    messages.SUCCESS,
                    f"退款 {yuan(refund.refund_fen)} 元已提交（{refund.out_refund_no}），到账后缩短会员期",
                )
            )
        report(request, "会员卡退款", outcomes)

    def _refund_confirm(self, request, selected: list[CardPurchase]):
        asked = dict(
            CardPurchase.objects.filter(pk__in=[p.pk for p in selected])
            .annotate(fen=Sum("refunds__refund_fen"))
            .values_list("pk", "fen")
        )
        left = {
            p.pk: p.pay_fen - (asked.get(p.pk) or 0) if p.status in member_cards.REFUNDABLE else 0 for p in selected
        }
        return render(
            request,
            "admin/starmall/money_confirm.html",
            {
                **self.admin_site.each_context(request),
                "title": "确认会员卡退款",
                "intro": "确认后按原支付方式退回微信（每张退回尚未退的全部金额）；到账后顾客的付费会员期按退款比例缩短。"
                "未支付或已全部退款的不会退款。",
                "headers": ["购买单号", "顾客", "会员卡", "状态", "支付（元）", "将退（元）", "扣回天数"],
                "rows": [
                    [
                        p.purchase_no,
                        p.customer.nickname or p.customer.openid,
                        p.card_name,
                        p.get_status_display(),
                        yuan(p.pay_fen),
                        yuan(left[p.pk]),
                        f"{p.days * left[p.pk] / p.pay_fen:.1f}",
                    ]
                    for p in selected
                ],
                "total": f"共 {len(selected)} 笔，合计退款 {yuan(sum(left.values()))} 元。",
                "form_action": "",
                "hidden": [("action", "refund")] + [("_selected_action", p.pk) for p in selected],
                "confirm_label": "确认退款",
                "back_url": reverse("admin:members_cardpurchase_changelist"),
            },
        )


admin.site.unregister(CardPurchase)
admin.site.register(CardPurchase, CardPurchaseRefundAdmin)
