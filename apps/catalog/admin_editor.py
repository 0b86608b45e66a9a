"""The product editor's form and page parts (used by ``ProductAdmin`` in ``apps.catalog.admin``):
cover and gallery uploaded through the shop's storage with previews and drag order, specs as
names and values generating the SKU matrix (``apps.catalog.sku_matrix``), per-row stock changes
through ``apps.catalog.stock.sku_stock_adjust``, counters read-only, a preview of the
mini-program's detail page. Every write goes through a catalog service that checks its permission."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.storage import default_storage
from django.db.models import Max, Min, Sum
from django.utils.html import format_html, format_html_join
from unfold.widgets import UnfoldAdminTextInputWidget

from apps.catalog import product_images, sku_matrix, stock
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Product, Sku
from starmall.admin_display import specs_text
from starmall.admin_money import fen_from_yuan, yuan
from starmall.errors import ShopError


def preview_url(value: str) -> str:
    """A picture as kept on a product (storage name, ``/static/...`` path or absolute URL) as a
    URL for the admin's own page (relative: works on whatever host staff opened the admin)."""
    if not value or value.startswith("/") or "://" in value:
        return value
    return default_storage.url(value)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleImageField(forms.FileField):
    """Several pictures in one input (``<input type=file multiple accept=image/*>``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": "image/jpeg,image/png"}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        if not data:
            return []
        files = data if isinstance(data, list | tuple) else [data]
        return [super(MultipleImageField, self).clean(f, initial) for f in files]


class GalleryWidget(forms.HiddenInput):
    """The gallery: thumbnails in order, dragged to reorder and × to remove (static
    ``catalog/product_editor.js`` rewrites the hidden JSON list). Not a hidden *field*: the
    admin hides the row of a hidden widget."""

    @property
    def is_hidden(self) -> bool:
        return False

    def render(self, name, value, attrs=None, renderer=None):
        hidden = super().render(name, value, {**(attrs or {}), "data-gallery-input": "1"}, renderer)
        try:
            images = json.loads(value) if isinstance(value, str) and value else (value or [])
        except ValueError:
            images = []
        thumbs = format_html_join(
            "",
            '<li class="bo-thumb" draggable="true" data-name="{}"><img src="{}" alt="商品图片">'
            '<button type="button" class="bo-thumb-remove" aria-label="移除">×</button></li>',
            ((image, preview_url(image)) for image in images if isinstance(image, str)),
        )
        return format_html(
            '{}<ul class="bo-gallery" data-gallery-for="{}">{}</ul>'
            '<p class="bo-muted">拖动图片调整顺序（第一张在详情页最先显示），× 移除；保存后生效。</p>',
            hidden,
            attrs.get("id", "") if attrs else "",
            thumbs,
        )


class SpecBuilderWidget(forms.HiddenInput):
    """The spec builder: the tree as hidden JSON (``apps.catalog.sku_matrix.spec_tree_of``'s
    shape) and the box ``catalog/spec_builder.js`` draws the names and values in."""

    @property
    def is_hidden(self) -> bool:
        return False

    def render(self, name, value, attrs=None, renderer=None):
        hidden = super().render(name, value, {**(attrs or {}), "data-spec-input": "1"}, renderer)
        return format_html(
            '{}<div class="bo-specs" id="spec-builder" data-spec-for="{}">'
            "<noscript>规格编辑需要启用 JavaScript。</noscript></div>",
            hidden,
            (attrs or {}).get("id", ""),
        )


class ProductEditorForm(forms.ModelForm):
    cover_file = forms.ImageField(
        label="上传封面",
        required=False,
        widget=forms.ClearableFileInput(attrs={"accept": "image/jpeg,image/png"}),
        help_text="JPEG / PNG，最大 5 MB；上传后替换当前封面",
    )
    gallery_files = MultipleImageField(label="上传详情图", required=False, help_text="可多选，追加到图片列表末尾")
    spec_builder = forms.CharField(
        label="规格",
        required=False,
        widget=SpecBuilderWidget,
        help_text="添加规格名和规格值，可改名、排序、删除。保存时：新组合生成 SKU；改名的值保留原 SKU（库存、订单不变）；"
        "删去的组合停用，不删除",
    )
    spec_price = forms.CharField(
        label="新规格的价格（元）",
        required=False,
        widget=UnfoldAdminTextInputWidget,
        help_text="只在生成新 SKU 时使用（默认为现有最低价），之后可在 SKU 表格逐行或批量修改",
    )

    class Meta:
        model = Product
        fields = ["name", "category", "kind", "description", "is_active", "sort", "freight_template", "images"]
        widgets = {"images": GalleryWidget}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.spec_plan = None
        self.initial.setdefault("spec_builder", json.dumps(sku_matrix.spec_tree_of(self.instance), ensure_ascii=False))
        if self.instance.pk:
            low = Sku.objects.filter(product=self.instance, is_active=True).aggregate(low=Min("price_fen"))["low"]
            if low:
                self.initial.setdefault("spec_price", yuan(low))

    def clean_spec_builder(self):
        """The tree (a list) or None when the field was not sent; its plan kept for clean()."""
        text = (self.cleaned_data.get("spec_builder") or "").strip()
        if not text:
            return None
        try:
            tree = json.loads(text)
            self.spec_plan = sku_matrix.spec_plan_preview(product_id=self.instance.pk, tree=tree)
        except ValueError as exc:
            raise ValidationError("规格数据格式不对，请刷新页面后重试。") from exc
        except ShopError as exc:
            raise ValidationError(exc.message) from exc
        return tree

    def clean_spec_price(self):
        value = (self.cleaned_data.get("spec_price") or "").strip()
        return fen_from_yuan(value) if value else None

    def clean(self):
        data = super().clean()
        plan = self.spec_plan
        if plan is not None and plan.create and not data.get("spec_price") and "spec_price" not in self.errors:
            self.add_error("spec_price", f"将新增 {len(plan.create)} 个规格组合，请填写新规格的价格（至少 0.01 元）。")
        return data

    def clean_images(self):
        images = self.cleaned_data.get("images") or []
        if not isinstance(images, list) or not all(isinstance(i, str) for i in images):
            raise ValidationError("图片列表格式不对")
        return images


class ProductEditorMixin:
    """Form, fieldsets, list columns and saves of the product editor."""

    form = ProductEditorForm
    fieldsets = [
        ("基本信息", {"fields": ["name", "category", "kind", "description", "is_active", "sort", "freight_template"]}),
        ("图片", {"fields": ["cover_preview", "cover_file", "images", "gallery_files"]}),
        ("规格（生成 SKU）", {"fields": ["spec_builder", "spec_price"]}),
        ("统计（只读）", {"fields": ["sales", "review_count", "rating_total", "created_at"]}),
        ("小程序详情预览", {"fields": ["mini_preview"]}),
    ]

    class Media:
        css = {"all": ["catalog/product_editor.css"]}
        js = ["catalog/product_editor.js", "catalog/spec_builder.js"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(min_price=Min("skus__price_fen"), max_price=Max("skus__price_fen"), stock_sum=Sum("skus__stock"))
        )

    @admin.display(description="封面")
    def cover_thumb(self, product: Product):
        if not product.cover_url:
            return "-"
        return format_html('<img src="{}" alt="封面" class="bo-list-thumb">', preview_url(product.cover_url))

    @admin.display(description="价格（元）")
    def price_range(self, product: Product) -> str:
        low, high = getattr(product, "min_price", None), getattr(product, "max_price", None)
        if low is None:
            return "-"
        return yuan(low) if low == high else f"{yuan(low)} ~ {yuan(high)}"

    @admin.display(description="库存", ordering="stock_sum")
    def stock_total(self, product: Product):
        return getattr(product, "stock_sum", None) or 0

    @admin.display(description="当前封面")
    def cover_preview(self, product: Product):
        if not product.cover_url:
            return "（未上传）"
        return format_html('<img src="{}" alt="封面" class="bo-cover-preview">', preview_url(product.cover_url))

    @admin.display(description="小程序详情页")
    def mini_preview(self, product: Product):
        """The mini-program's product page as the customer sees it: cover, name, price range,
        specs, description (a sketch, not the real rendering)."""
        if not product.pk:
            return "保存后显示预览"
        skus = list(Sku.objects.filter(product=product, is_active=True).order_by("pk"))
        prices = [sku.price_fen for sku in skus]
        price = "-" if not prices else (yuan(min(prices)) if min(prices) == max(prices) else f"{yuan(min(prices))} 起")
        chips = format_html_join(
            "",
            '<div class="bo-mp-spec"><span>{}</span>{}</div>',
            (
                (s["name"], format_html_join("", "<i>{}</i>", ((v["value"],) for v in s["values"])))
                for s in sku_matrix.spec_tree_of(product)
            ),
        )
        gallery = format_html_join("", '<img src="{}" alt="">', ((preview_url(i),) for i in (product.images or [])[:4]))
        return format_html(
            '<div class="bo-mp" id="mini-preview"><div class="bo-mp-cover">{}</div><div class="bo-mp-body">'
            '<div class="bo-mp-price">¥{}</div><div class="bo-mp-name">{}</div>'
            '<div class="bo-mp-meta">已售 {} · 评价 {}</div>{}<div class="bo-mp-desc">{}</div>'
            '<div class="bo-mp-gallery">{}</div></div><div class="bo-mp-bar"><span>加入购物车</span><b>立即购买</b></div></div>',
            format_html('<img src="{}" alt="">', preview_url(product.cover_url)) if product.cover_url else "无封面",
            price,
            product.name,
            product.sales,
            product.review_count,
            chips,
            product.description[:120],
            gallery,
        )

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        cover = form.cleaned_data.get("cover_file")
        gallery = form.cleaned_data.get("gallery_files") or []
        if not cover and not gallery:
            return
        try:
            cover_name = product_images.product_image_store(file=cover, user=request.user) if cover else None
            names = [product_images.product_image_store(file=f, user=request.user) for f in gallery]
            images = list(form.cleaned_data.get("images") or obj.images or []) + names
            product_images.product_images_set(product_id=obj.pk, cover=cover_name, images=images, user=request.user)
        except ShopError as exc:
            messages.error(request, f"图片未保存：{exc.message}")
        except PermissionDenied as exc:
            messages.error(request, f"图片未保存：{exc}")
        else:
            obj.refresh_from_db(fields=["cover_url", "images"])

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        tree = form.cleaned_data.get("spec_builder")
        if tree is None:
            return
        try:
            plan = sku_matrix.spec_tree_apply(
                product_id=form.instance.pk, tree=tree, price_fen=form.cleaned_data.get("spec_price"), user=request.user
            )
        except ShopError as exc:
            messages.error(request, f"规格未保存：{exc.message}")
        except PermissionDenied as exc:
            messages.error(request, f"规格未保存：{exc}")
        else:
            if plan.changes:
                messages.success(request, plan_summary(plan))

    def save_formset(self, request, form, formset, change):
        """The matrix rows (changed fields only), then per row its picture and its stock change,
        each through its catalog service."""
        super().save_formset(request, form, formset, change)
        for row in formset.forms:
            data = getattr(row, "cleaned_data", None) or {}
            if not row.instance.pk:
                continue
            if data.get("image_file"):
                self._sku_image(request, row.instance, data["image_file"])
            if data.get("stock_change"):
                self._sku_stock(request, row.instance, data["stock_change"])

    def _sku_image(self, request, sku: Sku, file) -> None:
        try:
            name = product_images.product_image_store(file=file, user=request.user)
            product_images.sku_image_set(sku_id=sku.pk, image=name, user=request.user)
        except ShopError as exc:
            messages.error(request, f"{specs_text(sku.specs)}：图片未保存：{exc.message}")
        except PermissionDenied as exc:
            messages.error(request, f"{specs_text(sku.specs)}：图片未保存：{exc}")

    def _sku_stock(self, request, sku: Sku, delta: int) -> None:
        if not request.user.has_perm("catalog.change_stock"):
            messages.error(request, f"{sku}：库存未修改：需要 change_stock 权限")
            return
        try:
            now = stock.sku_stock_adjust(sku_id=sku.pk, delta=delta)
        except InsufficientStock as exc:
            messages.error(request, f"{sku}：{exc.message}")
        else:
            messages.success(request, f"{specs_text(sku.specs)}：库存 {delta:+d}，现为 {now}")


def plan_summary(plan) -> str:
    """The spec change in one line: "规格已更新：新增 2 个 SKU（…），改名 1 个，停用 1 个（…）"."""
    parts = []
    if plan.create:
        parts.append("新增 {} 个 SKU（{}）".format(len(plan.create), "、".join(specs_text(s) for s in plan.create)))
    if plan.rename:
        parts.append(f"改名 {len(plan.rename)} 个（原 SKU、库存保留）")
    if plan.revive:
        parts.append(f"重新启用 {len(plan.revive)} 个")
    if plan.deactivate:
        parts.append(f"停用 {len(plan.deactivate)} 个（订单仍引用，未删除）")
    suffix = "。新 SKU 的库存为 0，请在表格中填写库存（库存增减）。" if plan.create else "。"
    return "规格已更新：" + "，".join(parts) + suffix
