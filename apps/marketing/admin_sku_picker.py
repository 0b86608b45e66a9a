"""Choosing the SKU of a 秒杀 / 拼团 / 砍价 by its product: the product by name (the admin's
autocomplete over ``ProductAdmin.search_fields``), then the SKU from that product's live SKUs
(a select the static ``marketing/sku_picker.js`` fills from ``<activity>/sku-options/?product=<id>``,
JSON, needing the activity's own add permission). The server checks again that the SKU is one
of the product's live SKUs (a form error otherwise)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.admin.widgets import AutocompleteSelect
from django.http import JsonResponse
from django.urls import path

from apps.catalog.models import Product, Sku
from starmall.admin_display import specs_text
from starmall.admin_money import yuan

NOT_OF_PRODUCT = "请选择所选商品的规格（该 SKU 不属于所选商品，或已停用）。"


def sku_label(sku: Sku) -> str:
    """``颜色：天青；容量：60ml · ¥128.00 · 库存 7`` (no specs: 默认规格)."""
    return f"{specs_text(sku.specs) or '默认规格'} · ¥{yuan(sku.price_fen)} · 库存 {sku.stock}"


def product_skus(product_id) -> list[Sku]:
    return list(Sku.objects.filter(product_id=product_id, is_active=True).order_by("pk"))


class ProductSkuFormMixin(forms.ModelForm):
    """Adds ``product`` (autocomplete) before ``sku`` on a new activity; ``sku`` then offers and
    accepts only that product's live SKUs."""

    product = forms.ModelChoiceField(
        label="商品",
        queryset=Product.objects.all(),
        required=False,
        widget=AutocompleteSelect(Sku._meta.get_field("product"), admin.site),
        help_text="输入商品名称搜索，然后在下方选择规格",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "sku" not in self.fields or self.instance.pk:
            return
        chosen = self.data.get("product") if self.is_bound else self.initial.get("product")
        product_id = chosen if str(chosen or "").isdigit() else None
        field = self.fields["sku"]
        field.queryset = Sku.objects.filter(product_id=product_id, is_active=True) if product_id else Sku.objects.none()
        field.label_from_instance = sku_label
        field.error_messages["invalid_choice"] = NOT_OF_PRODUCT
        getattr(field.widget, "widget", field.widget).attrs["data-sku-picker"] = "1"  # inside the admin's wrapper

    def clean(self):
        data = super().clean()
        if self.instance.pk or "sku" not in self.fields:
            return data
        product, sku = data.get("product"), data.get("sku")
        if product is None:
            self.add_error("product", "请选择商品。")
        elif sku is not None and sku.product_id != product.pk:
            self.add_error("sku", NOT_OF_PRODUCT)
        return data


class ProductSkuAdminMixin:
    """The JSON endpoint ``sku-options/`` of an activity's admin and the picker's script."""

    class Media:
        js = ["marketing/sku_picker.js"]

    def get_urls(self):
        info = self.model._meta.app_label, self.model._meta.model_name
        return [
            path("sku-options/", self.admin_site.admin_view(self.sku_options), name=f"{info[0]}_{info[1]}_sku_options"),
            *super().get_urls(),
        ]

    def sku_options(self, request):
        """``{"skus": [{"id", "label", "stock", "price_fen"}]}`` of ``?product=<id>``'s live SKUs;
        403 JSON without the activity's add permission, 400 JSON for a bad id."""
        if not self.has_add_permission(request):
            return JsonResponse({"code": "forbidden", "message": "没有权限安排此活动。"}, status=403)
        product_id = request.GET.get("product", "")
        if not product_id.isdigit():
            return JsonResponse({"code": "invalid", "message": "请先选择商品。"}, status=400)
        skus = product_skus(int(product_id))
        return JsonResponse(
            {"skus": [{"id": s.pk, "label": sku_label(s), "stock": s.stock, "price_fen": s.price_fen} for s in skus]}
        )

    def get_fields(self, request, obj=None):
        return product_before_sku(list(super().get_fields(request, obj)), obj)


def product_before_sku(fields: list[str], obj) -> list[str]:
    """A new activity's fields with ``product`` just before ``sku``; a scheduled one's without it
    (its SKU never changes)."""
    fields = [f for f in fields if f != "product"]
    if obj is None and "sku" in fields:
        fields.insert(fields.index("sku"), "product")
    return fields
