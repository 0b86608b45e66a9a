"""The product list's bulk actions: 上架, 下架, 设置分类, 设置标签 (through ``apps.catalog.product_bulk``,
permission ``catalog.change_product``, checked when offered and again inside). Each changed
product gets a line in its admin history (LogEntry, "历史"); the page reports per product."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from unfold.forms import ActionForm

from apps.catalog import product_bulk
from apps.catalog.models import Category
from starmall.admin import Outcome, report, require_perm
from starmall.errors import ShopError

CHANGE = "catalog.change_product"
TAG_CHOICES = [
    ("", "选择标签"),
    ("hot:1", "设为热卖"),
    ("hot:0", "取消热卖"),
    ("recommended:1", "设为推荐"),
    ("recommended:0", "取消推荐"),
]


class ProductActionForm(ActionForm):
    category = forms.ModelChoiceField(
        label="分类", queryset=Category.objects.all(), required=False, empty_label="选择分类（设置分类用）"
    )
    tag = forms.ChoiceField(label="标签", choices=TAG_CHOICES, required=False)


class ProductBulkActionsMixin:
    action_form = ProductActionForm
    actions = ["put_on_sale", "take_off_sale", "set_category", "set_tag"]

    @admin.action(description="上架所选商品", permissions=["change"])
    def put_on_sale(self, request, queryset):
        self._bulk(request, queryset, "上架", "已上架", "原已上架", product_bulk.products_set_active, active=True)

    @admin.action(description="下架所选商品", permissions=["change"])
    def take_off_sale(self, request, queryset):
        self._bulk(request, queryset, "下架", "已下架", "原已下架", product_bulk.products_set_active, active=False)

    @admin.action(description="设置分类（先在右侧选择分类）", permissions=["change"])
    def set_category(self, request, queryset):
        chosen = request.POST.get("category", "")
        category = Category.objects.filter(pk=int(chosen)).first() if chosen.isdigit() else None
        if category is None:
            require_perm(request, CHANGE)
            messages.error(request, "请先在操作旁选择一个分类。")
            return
        done = f"分类改为「{category.name}」"
        self._bulk(
            request,
            queryset,
            "设置分类",
            done,
            "原已在该分类",
            product_bulk.products_set_category,
            category_id=category.pk,
        )

    @admin.action(description="设置标签（先在右侧选择标签）", permissions=["change"])
    def set_tag(self, request, queryset):
        tag, _, on = request.POST.get("tag", "").partition(":")
        if tag not in product_bulk.TAGS or on not in ("0", "1"):
            require_perm(request, CHANGE)
            messages.error(request, "请先在操作旁选择一个标签。")
            return
        label = product_bulk.TAGS[tag][1]
        done, same = (f"已设为{label}", f"原已是{label}") if on == "1" else (f"已取消{label}", f"原本不是{label}")
        self._bulk(request, queryset, "设置标签", done, same, product_bulk.products_set_tag, tag=tag, on=on == "1")

    def _bulk(self, request, queryset, verb: str, done: str, same: str, service, **kwargs) -> None:
        """Run ``service`` over the selection; report per product; log each changed one."""
        require_perm(request, CHANGE)
        products = {p.pk: p for p in queryset.order_by("pk")}
        try:
            result = service(product_ids=list(products), user=request.user, **kwargs)
        except ShopError as exc:
            messages.error(request, f"{verb}：{exc.message}")
            return
        outcomes = []
        for pk, product in products.items():
            if pk in result.changed:
                self.log_change(request, product, f"批量操作：{done}")
                outcomes.append(Outcome(product.name, messages.SUCCESS, done))
            elif pk in result.refused:
                outcomes.append(Outcome(product.name, messages.ERROR, f"未{verb}：{result.refused[pk]}"))
            else:
                outcomes.append(Outcome(product.name, messages.WARNING, same))
        report(request, verb, outcomes)
