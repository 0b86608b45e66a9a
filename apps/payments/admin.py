from django.contrib import admin

from apps.payments.models import Notification, Payment


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdmin):
    list_display = ["id", "order", "method", "out_trade_no", "total_fee", "status", "transaction_id", "paid_at"]
    list_filter = ["status", "method"]
    search_fields = ["out_trade_no", "transaction_id", "order__order_no"]


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ["id", "received_at", "out_trade_no", "transaction_id", "total_fee", "outcome"]
    list_filter = ["outcome"]
    search_fields = ["out_trade_no", "transaction_id"]
