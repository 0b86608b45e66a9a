"""Back office for recharge: packages (amounts in yuan, stored as fen: the site's
``YuanAdminMixin``, bounds from the model's validators) and the recharges themselves
(read-only: they change only through WeChat's notification / orderquery, ``apps.payments.recharges``)."""

from django.contrib import admin

from apps.payments import recharges
from apps.payments.models import Recharge, RechargePackage
from starmall.admin import ChangedFieldsAdmin, ReadOnlyModelAdmin

PACKAGE_FIELDS = ["pay_fen", "bonus_fen", "is_active", "sort"]


@admin.register(RechargePackage)
class RechargePackageAdmin(ChangedFieldsAdmin):
    """A package's terms are copied into each recharge, so editing one never changes a
    recharge already made; retire a package with 启用 off (no delete)."""

    fields = PACKAGE_FIELDS
    list_display = ["id", "pay_fen", "bonus_fen", "is_active", "sort"]
    list_editable = ["is_active", "sort"]

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        columns = [f for f in form.changed_data if f in PACKAGE_FIELDS]
        recharges.recharge_package_save(package=obj, changed=columns if change else None)


@admin.register(Recharge)
class RechargeAdmin(ReadOnlyModelAdmin):
    list_display = [
        "recharge_no",
        "customer",
        "pay_fen",
        "bonus_fen",
        "status",
        "created_at",
        "paid_at",
        "transaction_id",
    ]
    list_filter = ["status", "api"]
    search_fields = ["recharge_no", "transaction_id", "customer__openid", "customer__nickname"]
    list_select_related = ["customer"]
