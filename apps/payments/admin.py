from django.contrib import admin, messages

from apps.payments import refunds, services
from apps.payments.models import Notification, Payment, PaymentStatus, Refund
from starmall.admin import ReadOnlyModelAdmin


@admin.register(Payment)
class PaymentAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "order", "method", "out_trade_no", "total_fee", "refunded_fen", "status",
                    "transaction_id", "paid_at", "checks"]
    list_filter = ["status", "method"]  # status = MANUAL: payments staff must resolve
    search_fields = ["out_trade_no", "transaction_id", "order__order_no"]
    actions = ["check_with_wechat"]

    @admin.action(description="Check with WeChat now (uncertain / manual payments)")
    def check_with_wechat(self, request, queryset):
        for payment in queryset.filter(status__in=(PaymentStatus.UNKNOWN, PaymentStatus.MANUAL)):
            outcome = services.payment_check_uncertain(payment=payment)
            if outcome == "manual":  # still no clear answer: stays with staff
                outcome = "still uncertain"
            messages.info(request, f"{payment.out_trade_no}: {outcome}")


@admin.register(Refund)
class RefundAdmin(ReadOnlyModelAdmin):
    list_display = ["out_refund_no", "order", "refund_fen", "reason", "status", "attempts", "next_attempt_at",
                    "created_at", "succeeded_at"]
    list_filter = ["status", "reason"]  # status = failed: refunds staff must look at (last_error)
    search_fields = ["out_refund_no", "order__order_no", "refund_id"]
    actions = ["retry"]

    @admin.action(description="Retry failed refunds (same out_refund_no)")
    def retry(self, request, queryset):
        done = sum(refunds.refund_retry(refund_id=r.pk, actor=f"staff:{request.user.username}") for r in queryset)
        messages.info(request, f"Queued {done} of {queryset.count()} refunds again.")


@admin.register(Notification)
class NotificationAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "received_at", "kind", "out_trade_no", "out_refund_no", "transaction_id",
                    "total_fee", "outcome"]
    list_filter = ["kind", "outcome"]
    search_fields = ["out_trade_no", "out_refund_no", "transaction_id"]
# Further admin pages of this app, registered on import.
from apps.payments import admin_invalid, admin_reconciliation  # noqa: E402,F401
