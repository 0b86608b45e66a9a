from django.contrib import admin, messages

from apps.orders import services
from apps.orders.models import AfterSale, FollowUp, Order, OrderEvent, OrderLine
from apps.payments import services as payments
from starmall.admin import ReadOnlyModelAdmin
from starmall.errors import ShopError


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class OrderLineInline(ReadOnlyInline):
    model = OrderLine
    fields = ["name", "specs", "sku", "price_fen", "quantity", "amount_fen"]


class OrderEventInline(ReadOnlyInline):
    model = OrderEvent
    fields = ["created_at", "from_status", "to_status", "actor", "note"]
    readonly_fields = ["created_at"]


class FollowUpInline(ReadOnlyInline):
    model = FollowUp
    fields = ["kind", "status", "attempts", "last_error", "created_at", "done_at"]
    readonly_fields = ["created_at"]


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["order_no", "customer", "kind", "status", "pay_fen", "pay_method", "created_at", "paid_at"]
    list_filter = ["status", "kind", "pay_method"]
    search_fields = ["order_no", "customer__nickname", "customer__openid", "customer__phone"]
    date_hierarchy = "created_at"
    list_select_related = ["customer"]
    inlines = [OrderLineInline, OrderEventInline, FollowUpInline]
    actions = ["mark_shipped", "mark_completed", "cancel_unpaid"]
    readonly_fields = [f.name for f in Order._meta.fields]  # state moves only through actions

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def _run(self, request, queryset, action, label):
        done = sum(1 for order in queryset if action(order))
        messages.info(request, f"{label}: {done} of {queryset.count()} orders changed.")

    @admin.action(description="Mark shipped (paid goods orders)")
    def mark_shipped(self, request, queryset):
        actor = f"staff:{request.user.username}"
        self._run(request, queryset, lambda o: services.order_ship(order=o, actor=actor), "Shipped")

    @admin.action(description="Mark completed (shipped goods / held consultations)")
    def mark_completed(self, request, queryset):
        actor = f"staff:{request.user.username}"
        self._run(request, queryset, lambda o: services.order_complete(order=o, actor=actor), "Completed")

    @admin.action(description="Cancel (unpaid orders; WeChat is asked first)")
    def cancel_unpaid(self, request, queryset):
        actor = f"staff:{request.user.username}"
        def cancel(order):
            try:
                payments.order_cancel(order=order, actor=actor, reason="cancelled by staff")
            except ShopError as exc:
                messages.warning(request, f"{order.order_no}: {exc.message}")
                return False
            return True

        self._run(request, queryset, cancel, "Cancelled")


@admin.register(FollowUp)
class FollowUpAdmin(admin.ModelAdmin):
    list_display = ["key", "kind", "status", "attempts", "created_at", "dispatched_at", "done_at"]
    list_filter = ["status", "kind"]
    search_fields = ["key", "order__order_no"]
    readonly_fields = [f.name for f in FollowUp._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(AfterSale)
class AfterSaleAdmin(admin.ModelAdmin):
    list_display = ["refund_no", "order", "amount_fen", "status", "reason", "decided_by", "created_at"]
    list_filter = ["status"]
    search_fields = ["refund_no", "order__order_no", "order__customer__openid"]
    readonly_fields = [f.name for f in AfterSale._meta.fields]
    actions = ["approve", "reject"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Approve: refund the amount (WeChat or balance)")
    def approve(self, request, queryset):
        from apps.payments import refunds
        from starmall.errors import ShopError

        done = 0
        for sale in queryset:
            try:
                done += refunds.after_sale_approve(after_sale_id=sale.pk, actor=f"staff:{request.user.username}") is not None
            except ShopError as exc:
                messages.error(request, f"{sale.refund_no}: {exc.message}")
        messages.info(request, f"Approved {done} of {queryset.count()} requests.")

    @admin.action(description="Reject")
    def reject(self, request, queryset):
        from apps.payments import refunds

        done = sum(refunds.after_sale_reject(after_sale_id=s.pk, actor=f"staff:{request.user.username}",
                                             note="rejected in admin") for s in queryset)
        messages.info(request, f"Rejected {done} of {queryset.count()} requests.")


@admin.register(OrderEvent)
class OrderEventAdmin(ReadOnlyModelAdmin):
    """The append-only status log of every order, across orders (audit)."""

    list_display = ["created_at", "order", "from_status", "to_status", "actor", "note"]
    list_filter = ["to_status", "actor"]
    search_fields = ["order__order_no", "actor", "note"]
    date_hierarchy = "created_at"
    list_select_related = ["order"]
