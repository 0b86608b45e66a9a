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
from unfold.widgets import UnfoldAdminTextareaWidget, UnfoldAdminTextInputWidget

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
    ``catalog/product_editor.js`` rewrites the hidden JSON list)."""

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


class ProductEditorForm(forms.ModelForm):
    cover_file = forms.ImageField(
        label="上传封面",
        required=False,
        widget=forms.ClearableFileInput(attrs={"accept": "image/jpeg,image/png"}),
        help_text="JPEG / PNG，最大 5 MB；上传后替换当前封面",
    )
    gallery_files = MultipleImageField(label="上传详情图", required=False, help_text="可多选，追加到图片列表末尾")
    spec_text = forms.CharField(
        label="规格",
        required=False,
        widget=UnfoldAdminTextareaWidget(attrs={"rows": 3, "placeholder": "颜色: 天青, 月白\n容量: 120ml, 150ml"}),
        help_text="每行一个规格：名称: 值1, 值2。保存时为缺少的组合生成 SKU（已有的 SKU 保留），再在下方表格填价格、库存、编码、重量",
    )
    spec_price = forms.CharField(
        label="新规格的价格（元）",
        required=False,
        widget=UnfoldAdminTextInputWidget,
        help_text="新生成的 SKU 先用这个价格，之后可逐行修改",
    )

    class Meta:
        model = Product
        fields = ["name", "category", "kind", "description", "is_active", "sort", "freight_template", "images"]
        widgets = {"images": GalleryWidget}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial.setdefault("spec_text", sku_matrix.spec_lines_text(self.instance))

    def clean_spec_text(self):
        text = self.cleaned_data.get("spec_text", "")
        try:
            sku_matrix.spec_lines_parse(text)
        except ShopError as exc:
            raise ValidationError(exc.message) from exc
        return text

    def clean_spec_price(self):
        value = (self.cleaned_data.get("spec_price") or "").strip()
        return fen_from_yuan(value) if value else None

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
        ("规格（生成 SKU）", {"fields": ["spec_text", "spec_price"]}),
        ("统计（只读）", {"fields": ["sales", "review_count", "rating_total", "created_at"]}),
        ("小程序详情预览", {"fields": ["mini_preview"]}),
    ]

    class Media:
        css = {"all": ["catalog/product_editor.css"]}
        js = ["catalog/product_editor.js"]

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
        dims = sku_matrix.spec_lines_parse(sku_matrix.spec_lines_text(product))
        chips = format_html_join(
            "",
            '<div class="bo-mp-spec"><span>{}</span>{}</div>',
            ((name, format_html_join("", "<i>{}</i>", ((v,) for v in values))) for name, values in dims),
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
        text = form.cleaned_data.get("spec_text", "")
        if not text.strip():
            return
        try:
            created = sku_matrix.sku_matrix_generate(
                product_id=form.instance.pk,
                text=text,
                price_fen=form.cleaned_data.get("spec_price") or 0,
                user=request.user,
            )
        except ShopError as exc:
            messages.error(request, f"规格未生成：{exc.message}")
        except PermissionDenied as exc:
            messages.error(request, f"规格未生成：{exc}")
        else:
            if created:
                messages.success(
                    request,
                    "已生成 {} 个 SKU：{}。请在 SKU 表格中填写库存（库存增减）和编码。".format(
                        len(created), "、".join(specs_text(s.specs) for s in created)
                    ),
                )

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        for row in formset.forms:
            delta = (getattr(row, "cleaned_data", None) or {}).get("stock_change") or 0
            if not delta or not row.instance.pk:
                continue
            if not request.user.has_perm("catalog.change_stock"):
                messages.error(request, f"{row.instance}：库存未修改：需要 change_stock 权限")
                continue
            try:
                now = stock.sku_stock_adjust(sku_id=row.instance.pk, delta=delta)
            except InsufficientStock as exc:
                messages.error(request, f"{row.instance}：{exc.message}")
            else:
                messages.success(request, f"{specs_text(row.instance.specs)}：库存 {delta:+d}，现为 {now}")
