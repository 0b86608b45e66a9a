"""Self-pickup in the back office: stores and their staff, the pickup orders of a store, the
verification page (自提核销), the log of verifications and of wrong codes typed.

Pickup codes appear only masked (``****5217``), never searched or filtered (``apps.orders.admin.PickupCodeHidden``).
Verifying needs ``stores.verify_pickup`` and goes through ``apps.stores.services.pickup_verify`` (as
``manage.py pickup_verify`` does), throttled per login (``apps.stores.verify_throttle``). A store's
staff (the 门店店员 role, ``StoreStaff``) see only their own store's pickup orders and verifications;
the wrong codes (核销码错误记录) are for operations, who see every store's with the view permissions.
A superuser sees every store and may verify anywhere.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.html import format_html

from apps.orders.admin import PickupCodeHidden
from apps.orders.models import Order
from apps.stores import selectors, services
from apps.stores.models import PickupOrder, PickupVerification, PickupVerifyFailure, Store, StoreStaff
from starmall.admin import ChangedFieldsAdmin, ReadOnlyModelAdmin, require_perm
from starmall.admin_money import yuan
from starmall.errors import ShopError


class StoreStaffInline(admin.TabularInline):
    model = StoreStaff
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Store)
class StoreAdmin(ChangedFieldsAdmin):
    list_display = ["id", "name", "address", "phone", "hours", "is_active", "sort"]
    list_editable = ["is_active", "sort"]
    inlines = [StoreStaffInline]

    def get_queryset(self, request):
        store_id = _own_store(request)
        qs = super().get_queryset(request)
        return qs if store_id is None else qs.filter(pk=store_id)


def _own_store(request) -> int | None:
    """The store whose rows the login sees: its own when bound to one (StoreStaff); None (every
    store) for a superuser and for other staff (operations) whose permissions open the page;
    -1 (nothing) for store staff (``stores.verify_pickup``) not bound to a store yet."""
    if request.user.is_superuser:
        return None
    store_id = selectors.staff_store_id(request.user)
    if store_id is not None:
        return store_id
    return -1 if request.user.has_perm(services.PERMISSION) else None


@admin.register(PickupOrder)
class PickupOrderAdmin(PickupCodeHidden, ReadOnlyModelAdmin):
    list_display = [
        "order_no",
        "status",
        "store_name",
        "pay_yuan",
        "paid_at",
        "pickup_code_shown",
        "pickup_verified_at",
        "pickup_verified_by",
    ]
    list_filter = ["status"]
    search_fields = ["order_no"]  # never the pickup code (PickupCodeHidden)
    fields = [
        "order_no",
        "status",
        "customer",
        "store_name",
        "pay_yuan",
        "paid_at",
        "pickup_code_shown",
        "pickup_verified_at",
        "pickup_verified_by",
        "remark",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        qs = super().get_queryset(request).select_related("customer")
        store_id = _own_store(request)
        return qs if store_id is None else qs.filter(pickup_store_id=store_id)

    @admin.display(description="自提门店")
    def store_name(self, order) -> str:
        return (order.pickup_store or {}).get("name", "-")

    @admin.display(description="实付（元）")
    def pay_yuan(self, order) -> str:
        return yuan(order.pay_fen)

    def get_urls(self):
        verify = self.admin_site.admin_view(self.verify_view)
        return [path("verify/", verify, name="stores_pickup_verify")] + super().get_urls()

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "title": "自提订单"}
        if request.user.has_perm(services.PERMISSION):
            messages.info(
                request, format_html('<a href="{}">→ 打开核销页面</a>', reverse("admin:stores_pickup_verify"))
            )
        return super().changelist_view(request, extra_context)

    def verify_view(self, request):
        """The verification page: a code in, THE verification service, the outcome as a message."""
        require_perm(request, services.PERMISSION)
        order = None
        if request.method == "POST":
            try:
                order = services.pickup_verify(code=request.POST.get("code", ""), user=request.user)
                messages.success(request, f"核销成功：订单 {order.order_no} 已完成。")
            except ShopError as exc:
                messages.error(request, f"未核销：{exc.message}")
            if order is None:
                return redirect(reverse("admin:stores_pickup_verify"))
            order = Order.objects.prefetch_related("lines").get(pk=order.pk)
        store_id = _own_store(request)
        return render(
            request,
            "admin/stores/verify.html",
            {
                **self.admin_site.each_context(request),
                "title": "自提核销",
                "order": order,
                "store": Store.objects.filter(pk=store_id).first() if store_id else None,
            },
        )


@admin.register(PickupVerification)
class PickupVerificationAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "code", "order", "store", "verified_by", "verified_at"]
    list_select_related = ["order", "store", "verified_by"]

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        store_id = _own_store(request)
        return qs if store_id is None else qs.filter(store_id=store_id)


@admin.register(PickupVerifyFailure)
class PickupVerifyFailureAdmin(ReadOnlyModelAdmin):
    """Wrong pickup codes staff typed (the code masked): who, at which store, when, why."""

    list_display = ["created_at", "user", "store", "code", "reason"]
    list_filter = ["reason", "store"]
    list_select_related = ["user", "store"]
    search_fields = ["user__username"]
    date_hierarchy = "created_at"

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        store_id = _own_store(request)
        return qs if store_id is None else qs.filter(store_id=store_id)
