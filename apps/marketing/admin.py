"""Staff schedule and change flash sales (秒杀) here, through the same services as everything else.

Adding or changing a sale needs the ``marketing.manage_flashsale`` permission. The SKU never
changes after scheduling; the sale's stock only relatively ("stock change": stock = stock + n).
"""

from django import forms
from django.contrib import admin, messages

from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Sku
from apps.marketing import flash_sales
from apps.marketing.admin_sku_picker import ProductSkuAdminMixin, ProductSkuFormMixin, product_before_sku
from apps.marketing.models import FlashSale, FlashSalePurchase
from starmall.admin import ReadOnlyModelAdmin
from starmall.errors import InvalidInput

MANAGE = "marketing.manage_flashsale"


class FlashSaleForm(ProductSkuFormMixin, forms.ModelForm):
    stock_change = forms.IntegerField(
        required=False,
        initial=0,
        label="秒杀库存增减",
        help_text="增加的件数；负数为撤回。按 库存 = 库存 + n 执行，不会覆盖期间卖出的数量。",
    )

    class Meta:
        model = FlashSale
        fields = ["title", "sku", "price_fen", "stock", "starts_at", "ends_at", "limit_per_customer", "is_active"]
        help_texts = {
            "price_fen": "至少 0.01 元，且不高于该 SKU 的售价",
            "stock": "本次秒杀的件数，不超过该 SKU 现有库存；每笔订单同时扣秒杀库存和 SKU 库存",
            "starts_at": "北京时间",
            "ends_at": "北京时间；一场秒杀最长 31 天",
        }

    def clean(self):
        data = super().clean()
        sale = self.instance if self.instance.pk else None
        sku = sale.sku if sale else data.get("sku")
        if isinstance(sku, Sku):
            sku = Sku.objects.select_related("product").get(pk=sku.pk)
        try:
            flash_sales.flash_sale_validate(
                sku=sku,
                price_fen=data.get("price_fen"),
                starts_at=data.get("starts_at"),
                ends_at=data.get("ends_at"),
                limit_per_customer=data.get("limit_per_customer"),
                stock=data.get("stock"),
                sale=sale,
            )
        except InvalidInput as exc:
            for field, problems in exc.detail.items():
                for problem in problems:
                    self.add_error(field if field in self.fields else None, problem)
        return data


@admin.register(FlashSale)
class FlashSaleAdmin(ProductSkuAdminMixin, admin.ModelAdmin):
    form = FlashSaleForm
    list_display = [
        "id",
        "title",
        "sku",
        "price_fen",
        "stock",
        "sold",
        "starts_at",
        "ends_at",
        "limit_per_customer",
        "is_active",
    ]
    list_filter = ["is_active"]
    search_fields = ["title", "sku__product__name"]
    date_hierarchy = "starts_at"

    def get_readonly_fields(self, request, obj=None):
        # Once scheduled, orders refer to the SKU and take the stock: neither is overwritten.
        return ["sku", "stock", "sold", "created_at"] if obj else ["sold", "created_at"]

    def get_fields(self, request, obj=None):
        fields = ["title", "sku", "price_fen", "stock", "starts_at", "ends_at", "limit_per_customer", "is_active"]
        return product_before_sku(fields + ["stock_change", "sold", "created_at"] if obj else fields, obj)

    def has_add_permission(self, request):
        return request.user.has_perm(MANAGE)

    def has_change_permission(self, request, obj=None):
        return request.user.has_perm(MANAGE)

    def has_delete_permission(self, request, obj=None):
        return False  # pause it (is_active off) instead: orders refer to it

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        terms = {k: data[k] for k in ("title", "price_fen", "starts_at", "ends_at", "limit_per_customer", "is_active")}
        if change:
            flash_sales.flash_sale_update(sale_id=obj.pk, **terms)
        else:
            sale = flash_sales.flash_sale_schedule(sku_id=data["sku"].pk, stock=data["stock"], **terms)
            obj.pk, obj.created_at, obj.sold = sale.pk, sale.created_at, sale.sold
        delta = data.get("stock_change") or 0
        if change and delta:
            try:
                obj.stock = flash_sales.flash_sale_stock_adjust(sale_id=obj.pk, delta=delta)
            except InsufficientStock as exc:
                messages.error(request, exc.message)
            else:
                messages.info(request, f"秒杀库存已调整 {delta:+d}，现为 {obj.stock}。")


@admin.register(FlashSalePurchase)
class FlashSalePurchaseAdmin(ReadOnlyModelAdmin):
    """Units each customer holds in each sale (live orders); written only by orders."""

    list_display = ["sale", "customer", "quantity"]
    list_filter = ["sale"]
    search_fields = ["customer__nickname", "customer__openid"]
    list_select_related = ["sale", "customer"]


# Coupons and the daily sign-in; 拼团 and 砍价: registered on import.
from apps.marketing import admin_coupons, admin_group_bargain  # noqa: E402,F401
