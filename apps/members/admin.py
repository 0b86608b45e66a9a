"""Back office of the members app: levels and member cards (staff edit them through the same
services as everything else), purchases, member rows and the growth ledger (read-only: they
change only through ``apps.members.services``), and the customer's level, growth and SVIP on
the customer page (an inline added to accounts' customer admin)."""

from django.contrib import admin
from django.utils import timezone

from apps.accounts.models import Customer
from apps.members import selectors, services
from apps.members.models import CardPurchase, GrowthEvent, Level, MemberCard, Membership
from starmall.admin import ChangedFieldsAdmin, ReadOnlyModelAdmin


@admin.register(Level)
class LevelAdmin(ChangedFieldsAdmin):
    """A level is reached at ``growth_min``; ``discount_percent`` applies at confirm (95 = 95 折)."""

    fields = ["name", "growth_min", "discount_percent", "icon"]
    list_display = ["name", "growth_min", "discount_percent", "created_at"]

    def save_model(self, request, obj, form, change):
        services.level_save(level=obj)


@admin.register(MemberCard)
class MemberCardAdmin(ChangedFieldsAdmin):
    """Purchases copy a card's days and price when made: editing one never changes a purchase;
    retire a card with 上架 off (no delete)."""

    fields = ["name", "days", "pay_fen", "original_fen", "active", "sort"]
    list_display = ["name", "days", "pay_fen", "original_fen", "active", "sort"]
    list_editable = ["active", "sort"]

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        services.card_save(card=obj)


@admin.register(CardPurchase)
class CardPurchaseAdmin(ReadOnlyModelAdmin):
    """Paid through WeChat's notification (or the sweep's query), never by hand."""

    list_display = [
        "purchase_no",
        "customer",
        "card_name",
        "days",
        "pay_fen",
        "status",
        "api",
        "starts_at",
        "ends_at",
        "paid_at",
        "refunded_fen",
    ]
    list_filter = ["status", "api", "card"]
    search_fields = ["purchase_no", "transaction_id", "customer__openid", "customer__nickname"]
    list_select_related = ["customer"]
    date_hierarchy = "created_at"


@admin.register(Membership)
class MembershipAdmin(ReadOnlyModelAdmin):
    list_display = ["customer", "growth", "level", "svip_expires_at"]
    search_fields = ["customer__openid", "customer__nickname", "customer__phone"]
    list_select_related = ["customer"]

    @admin.display(description="等级")
    def level(self, membership: Membership) -> str:
        level = selectors.level_for(membership.growth)
        return level.name if level else "-"


@admin.register(GrowthEvent)
class GrowthEventAdmin(ReadOnlyModelAdmin):  # append-only: written by the growth services
    list_display = ["id", "customer", "change", "reason", "order_no", "ref", "basis_fen", "created_at"]
    list_filter = ["reason"]
    search_fields = ["order_no", "ref", "customer__openid", "customer__nickname"]
    list_select_related = ["customer"]


class MembershipInline(admin.StackedInline):
    """The customer's level, growth and paid membership, read-only on the customer page."""

    model = Membership
    fields = ["level", "growth", "svip"]
    readonly_fields = ["level", "growth", "svip"]
    can_delete = False
    extra = 0
    verbose_name = verbose_name_plural = "会员"

    @admin.display(description="等级")
    def level(self, membership: Membership) -> str:
        level = selectors.level_for(membership.growth)
        return f"{level.name}（按价格的 {level.discount_percent}%）" if level else "-"

    @admin.display(description="付费会员（SVIP）")
    def svip(self, membership: Membership) -> str:
        expires = membership.svip_expires_at
        if expires is None or expires <= timezone.now():
            return "否"
        return f"是，{timezone.localtime(expires):%Y-%m-%d %H:%M} 到期"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# accounts' customer page, as registered (the shop's site registers a subclass of CustomerAdmin);
# accounts sits below members and cannot name this inline itself.
_customer_admin = admin.site.get_model_admin(Customer)
if MembershipInline not in _customer_admin.inlines:
    _customer_admin.inlines = [*_customer_admin.inlines, MembershipInline]
