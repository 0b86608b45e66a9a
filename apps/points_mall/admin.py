"""Back office for the points mall.

* Items: staff create them with their stock; afterwards the page never writes the stock (an
  exchange may have taken one meanwhile): "增加/减少库存" adds a signed number through
  ``services.item_stock_adjust`` (conditional UPDATE, never below 0). Django's own item permissions.
* Exchanges: read-only (made by ``services.item_exchange``); a goods exchange's order is
  shipped from the order list like any other. Action 撤销兑换 (``points_mall.reverse_exchange``)
  through ``reversals.exchange_reverse``: points and the item's stock back, once; goods not yet
  shipped (or, with the "goods returned" action, shipped and back), a coupon still unused.
"""

from django import forms
from django.contrib import admin, messages

from apps.points_mall import reversals, services
from apps.points_mall.models import Exchange, Item
from starmall.admin import ChangedFieldsAdmin, Outcome, ReadOnlyModelAdmin, report, require_perm
from starmall.errors import InvalidInput, ShopError

REVERSE = "points_mall.reverse_exchange"


class ItemForm(forms.ModelForm):
    stock_change = forms.IntegerField(
        label="增加/减少库存", required=False, help_text="正数增加、负数减少（不会低于 0）；留空不变"
    )

    class Meta:
        model = Item
        fields = ["name", "kind", "sku", "coupon_template", "points", "stock", "limit_per_customer", "image", "sort"]

    def clean(self):
        data = super().clean()
        kind = data.get("kind") or self.instance.kind
        if kind == Item.Kind.GOODS and not data.get("sku"):
            self.add_error("sku", "实物商品需选择 SKU")
        if kind == Item.Kind.COUPON and not data.get("coupon_template"):
            self.add_error("coupon_template", "优惠券需选择券模板")
        if kind == Item.Kind.GOODS:
            data["coupon_template"] = None
        elif kind == Item.Kind.COUPON:
            data["sku"] = None
        return data


@admin.register(Item)
class ItemAdmin(ChangedFieldsAdmin):
    form = ItemForm
    list_display = ["name", "kind", "points", "stock", "limit_per_customer", "exchanged", "sort", "is_active"]
    list_filter = ["kind", "is_active"]
    search_fields = ["name"]
    raw_id_fields = ["sku"]

    def get_fields(self, request, obj=None):
        fields = [*self.form.Meta.fields, "is_active"]
        return fields if obj is None else [*fields, "stock_change"]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else ["kind", "stock"]

    @admin.display(description="已兑换")
    def exchanged(self, item: Item) -> int:
        return item.exchanges.count()

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        delta = form.cleaned_data.get("stock_change")
        if change and delta:
            try:
                left = services.item_stock_adjust(item_id=obj.pk, delta=delta)
            except InvalidInput as exc:
                messages.error(request, exc.message)
                return
            obj.stock = left
            messages.info(request, f"库存已调整为 {left}。")


@admin.register(Exchange)
class ExchangeAdmin(ReadOnlyModelAdmin):
    list_display = [
        "exchange_no",
        "customer",
        "item",
        "kind",
        "points",
        "order_no",
        "coupon",
        "created_at",
        "reversed_at",
    ]
    list_filter = ["kind"]
    search_fields = ["exchange_no", "order_no", "customer__openid", "customer__nickname"]
    list_select_related = ["customer", "item", "coupon"]
    actions = ["reverse", "reverse_returned"]

    def has_reverse_permission(self, request):
        return request.user.has_perm(REVERSE)

    def _reverse(self, request, queryset, *, returned: bool) -> None:
        require_perm(request, REVERSE)
        outcomes = []
        for exchange in queryset.order_by("pk"):
            try:
                reversals.exchange_reverse(
                    exchange_id=exchange.pk, actor=f"staff:{request.user.get_username()}", returned=returned
                )
            except ShopError as exc:
                outcomes.append(Outcome(exchange.exchange_no, messages.WARNING, f"未撤销：{exc.message}"))
                continue
            outcomes.append(Outcome(exchange.exchange_no, messages.SUCCESS, f"已撤销，退回 {exchange.points} 积分"))
        report(request, "撤销兑换", outcomes)

    @admin.action(description="撤销兑换（未发货的商品 / 未使用的券；退回积分和库存）", permissions=["reverse"])
    def reverse(self, request, queryset):
        self._reverse(request, queryset, returned=False)

    @admin.action(description="撤销兑换（已发货，商品已退回）", permissions=["reverse"])
    def reverse_returned(self, request, queryset):
        self._reverse(request, queryset, returned=True)
