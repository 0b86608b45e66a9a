"""Back office for recharge (issue 9): packages (amounts in yuan, stored as fen) and the
recharges themselves (read-only: they change only through WeChat's notification / orderquery,
``apps.payments.recharges``)."""

from django import forms
from django.contrib import admin

from apps.payments import recharges
from apps.payments.models import Recharge, RechargePackage
from starmall.admin import ChangedFieldsAdmin, ReadOnlyModelAdmin
from starmall.admin_money import YuanField, yuan


class RechargePackageForm(forms.ModelForm):
    pay_fen = YuanField(label="支付（元）", min_fen=1, max_fen=10**8, help_text="顾客通过微信支付的金额，元")
    bonus_fen = YuanField(label="赠送（元）", min_fen=0, max_fen=10**8, help_text="额外记入余额的金额，元")

    class Meta:
        model = RechargePackage
        fields = ["pay_fen", "bonus_fen", "is_active", "sort"]


@admin.register(RechargePackage)
class RechargePackageAdmin(ChangedFieldsAdmin):
    """A package's terms are copied into each recharge, so editing one never changes a
    recharge already made; retire a package with *is active* off (no delete)."""

    form = RechargePackageForm
    list_display = ["id", "pay_yuan", "bonus_yuan", "is_active", "sort"]
    list_editable = ["is_active", "sort"]

    @admin.display(description="支付（元）")
    def pay_yuan(self, obj):
        return yuan(obj.pay_fen)

    @admin.display(description="赠送（元）")
    def bonus_yuan(self, obj):
        return yuan(obj.bonus_fen)

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        columns = [f for f in form.changed_data if f in ("pay_fen", "bonus_fen", "is_active", "sort")]
        recharges.recharge_package_save(package=obj, changed=columns if change else None)


@admin.register(Recharge)
class RechargeAdmin(ReadOnlyModelAdmin):
    list_display = ["recharge_no", "customer", "pay_yuan", "bonus_yuan", "status", "created_at", "paid_at",
                    "transaction_id"]
    list_filter = ["status"]
    search_fields = ["recharge_no", "transaction_id", "customer__openid", "customer__nickname"]
    list_select_related = ["customer"]

    @admin.display(description="支付（元）")
    def pay_yuan(self, obj):
        return yuan(obj.pay_fen)

    @admin.display(description="赠送（元）")
    def bonus_yuan(self, obj):
        return yuan(obj.bonus_fen)
