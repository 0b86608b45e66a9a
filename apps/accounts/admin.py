from django.contrib import admin, messages
from django.db import models

from apps.accounts import services
from apps.accounts.models import Address, Coupon, Customer, TokenRevocation, WalletEvent
from starmall.admin import ChangedFieldsAdmin, ReadOnlyModelAdmin
from starmall.admin_display import coupon_terms_text


class AddressInline(admin.TabularInline):
    model = Address
    extra = 0


@admin.register(Customer)
class CustomerAdmin(ChangedFieldsAdmin):
    list_display = ["id", "nickname", "openid", "phone", "balance_fen", "points", "is_active", "created_at"]
    search_fields = ["openid", "nickname", "phone"]
    list_filter = ["is_active"]
    # Balance and points change only through services (conditional UPDATE + WalletEvent); a
    # save writes only the fields changed here, never the balance or points read at page load.
    readonly_fields = ["openid", "unionid", "balance_fen", "points", "created_at"]
    inlines = [AddressInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}  # avatar URLs (Django 6 default)
    actions = ["deactivate"]

    @admin.action(description="停用所选顾客（登录令牌随即失效）", permissions=["change"])
    def deactivate(self, request, queryset):
        """``services.customers_deactivate``: one UPDATE, the token revocations in its transaction."""
        changed = services.customers_deactivate(customer_ids=list(queryset.values_list("pk", flat=True)))
        messages.success(request, f"已停用 {changed} 位顾客，其登录令牌随即失效。")


@admin.register(TokenRevocation)
class TokenRevocationAdmin(ReadOnlyModelAdmin):
    """Deactivated customers whose tokens Redis has not confirmed revoked yet (retried by beat)."""

    list_display = ["customer_id", "requested_at", "attempts", "last_error"]
    search_fields = ["customer_id"]


@admin.register(WalletEvent)
class WalletEventAdmin(ReadOnlyModelAdmin):  # append-only: written by the wallet services
    list_display = ["id", "customer", "kind", "reason", "amount", "state", "order_no", "available_at", "created_at"]
    list_filter = ["kind", "reason", "state"]
    search_fields = ["ref", "order_no", "customer__openid", "customer__nickname"]


@admin.register(Coupon)
class CouponAdmin(ChangedFieldsAdmin):
    """Staff may grant coupons and edit their terms; ``status`` / ``used_order_no`` move only in
    the wallet services (take at order create, return on cancel)."""

    list_display = ["title", "customer", "terms", "status", "valid_until", "used_order_no"]
    list_filter = ["status", "kind"]
    search_fields = ["customer__openid", "used_order_no", "title"]
    raw_id_fields = ["customer"]

    @admin.display(description="优惠")
    def terms(self, coupon: Coupon) -> str:
        return coupon_terms_text(
            kind=coupon.kind,
            amount_fen=coupon.discount_fen,
            percent=coupon.percent,
            max_discount_fen=coupon.max_discount_fen,
            threshold_fen=coupon.min_spend_fen,
        )

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ["status", "used_order_no", "template", "batch"]
        return ["customer", "status", "used_order_no", "template", "batch"]  # a coupon does not change hands


@admin.register(Address)
class AddressAdmin(ChangedFieldsAdmin):
    list_display = ["id", "customer", "name", "phone", "city", "is_default"]
    search_fields = ["customer__openid", "name", "phone"]
    raw_id_fields = ["customer"]


from apps.accounts import admin_messages  # noqa: E402,F401 - subscription templates, refusals, SMS codes
