from django.contrib import admin, messages

from apps.payments import refunds, services
from apps.payments.models import Notification, Payment, PaymentStatus, Refund
from starmall.admin import Outcome, ReadOnlyModelAdmin, report, require_perm

CHECK_OUTCOMES = {  # payment_check_uncertain's answer -> (level, what staff read)
    "paid": (messages.SUCCESS, "微信确认已支付，订单已标记为已支付"),
    "clear": (messages.SUCCESS, "微信确认未支付，支付记录已恢复为待支付/已关闭"),
    "later": (messages.WARNING, "仍无法确认，稍后会自动再查"),
    "manual": (messages.WARNING, "仍无法确认（微信无明确答复），请稍后再试"),
}


@admin.register(Payment)
class PaymentAdmin(ReadOnlyModelAdmin):
    # The order column is the out_trade_no of a WeChat payment (the order number).
    list_display = [
        "order",
        "method",
        "api",
        "total_fee",
        "refunded_fen",
        "status",
        "transaction_id",
        "paid_at",
        "checks",
    ]
    list_filter = ["status", "method", "api"]  # status = MANUAL: payments staff must resolve
    search_fields = ["out_trade_no", "transaction_id", "order__order_no"]
    actions = ["check_with_wechat"]

    def has_resolve_permission(self, request):
        return request.user.has_perm("payments.resolve_payment")

    @admin.action(description="立即向微信查询（状态未知 / 人工处理的支付）", permissions=["resolve"])
    def check_with_wechat(self, request, queryset):
        require_perm(request, "payments.resolve_payment")
        outcomes = []
        for payment in queryset.order_by("pk"):
            label = payment.out_trade_no or str(payment)
            if payment.status not in (PaymentStatus.UNKNOWN, PaymentStatus.MANUAL):
                outcomes.append(
                    Outcome(
                        label,
                        messages.WARNING,
                        f"未查询：状态为「{payment.get_status_display()}」，只处理状态未知/人工处理的支付",
                    )
                )
                continue
            level, text = CHECK_OUTCOMES[services.payment_check_uncertain(payment=payment)]
            outcomes.append(Outcome(label, level, text))
        report(request, "向微信查询", outcomes)


@admin.register(Refund)
class RefundAdmin(ReadOnlyModelAdmin):
    list_display = [
        "out_refund_no",
        "order",
        "card_purchase",  # a member card's refund has no order
        "refund_fen",
        "reason",
        "customer_reason",
        "status",
        "attempts",
        "next_attempt_at",
        "created_at",
        "succeeded_at",
    ]
    list_select_related = ["order", "after_sale", "card_purchase"]
    list_filter = ["status", "reason"]  # status = failed: refunds staff must look at (last_error)
    search_fields = ["out_refund_no", "order__order_no", "card_purchase__purchase_no", "refund_id"]
    actions = ["retry"]

    @admin.display(description="退款理由")
    def customer_reason(self, refund):
        """The words behind an after-sale refund (the customer's, or a batch's reason); ``reason``
        says only which kind of refund it is (售后退款, 重复支付 ...)."""
        return refund.after_sale.reason if refund.after_sale_id else "-"

    def has_retry_permission(self, request):
        return request.user.has_perm("payments.retry_refund")

    @admin.action(description="重试失败的退款（同一退款单号）", permissions=["retry"])
    def retry(self, request, queryset):
        require_perm(request, "payments.retry_refund")
        outcomes = []
        for refund in queryset.order_by("pk"):
            if refunds.refund_retry(refund_id=refund.pk, actor=f"staff:{request.user.username}"):
                outcomes.append(Outcome(refund.out_refund_no, messages.SUCCESS, "已重新提交（同一退款单号）"))
            else:
                refund.refresh_from_db(fields=["status"])
                outcomes.append(
                    Outcome(
                        refund.out_refund_no,
                        messages.WARNING,
                        f"未重试：状态为「{refund.get_status_display()}」，只能重试失败的退款",
                    )
                )
        report(request, "重试退款", outcomes)


@admin.register(Notification)
class NotificationAdmin(ReadOnlyModelAdmin):
    list_display = ["received_at", "kind", "out_trade_no", "out_refund_no", "transaction_id", "total_fee", "outcome"]
    list_filter = ["kind", "outcome"]
    search_fields = ["out_trade_no", "out_refund_no", "transaction_id"]


# Further admin pages of this app, registered on import.
from apps.payments import (  # noqa: E402,F401
    admin_attendance,  # the booking admin's attendance actions (老师缺席 refunds)
    admin_groups,  # noqa: E402,F401 - 拼团 groups (ending one refunds)
    admin_invalid,  # invalid notifications per day, queued payment results
    admin_member_cards,  # member card purchases: the refund action
    admin_recharges,
    admin_reconciliation,
    admin_refund_batches,
    admin_shipping,  # shipping information reported to WeChat (发货信息)
)
