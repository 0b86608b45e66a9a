from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html
from unfold.widgets import UnfoldAdminIntegerFieldWidget

from apps.catalog import stock
from apps.catalog.admin_bulk import ProductBulkActionsMixin
from apps.catalog.admin_editor import ProductEditorMixin, preview_url
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Category, Product, Sku, Teacher
from starmall.admin import ChangedFieldsAdmin, save_changed_fields
from starmall.admin_display import specs_text

CHANGE_STOCK = "catalog.change_stock"


@admin.register(Category)
class CategoryAdmin(ChangedFieldsAdmin):
    list_display = ["id", "name", "parent", "kind", "sort"]
    list_filter = ["kind"]


class SkuImageInput(forms.ClearableFileInput):
    """A SKU's picture: the current one as a thumbnail, a file input to replace it."""

    template_name = "django/forms/widgets/file.html"

    def render(self, name, value, attrs=None, renderer=None):
        field = super().render(name, value, attrs, renderer)
        current = self.attrs.get("data-current")
        thumb = format_html('<img src="{}" alt="规格图片" class="bo-sku-thumb">', current) if current else ""
        return format_html("{}{}", thumb, field)


class SkuInlineForm(forms.ModelForm):
    """One row of the SKU matrix: price, member price (SVIP), code, weight editable; stock moved by a relative
    ``stock_change`` (``sku_stock_adjust``, needs ``catalog.change_stock``), never overwritten; a picture
    (``image_file``: Pillow-checked, stored like the product's); ``pick`` ticks the row for the batch bar."""

    pick = forms.BooleanField(required=False, label="选择")
    image_file = forms.ImageField(
        required=False, label="规格图片", widget=SkuImageInput(attrs={"accept": "image/jpeg,image/png"})
    )
    stock_change = forms.IntegerField(
        required=False, initial=0, label="库存增减", widget=UnfoldAdminIntegerFieldWidget(attrs={"style": "width:7rem"})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.image_url:
            self.fields["image_file"].widget.attrs["data-current"] = preview_url(self.instance.image_url)

    class Meta:
        model = Sku
        fields = ["price_fen", "member_price_fen", "code", "weight_g", "is_active"]


class SkuInline(admin.TabularInline):
    """The product's SKU matrix, one row per spec combination (specs as text, made by the
    spec editor above: ``apps.catalog.sku_matrix``)."""

    model = Sku
    form = SkuInlineForm
    extra = 0
    can_delete = False  # order lines refer to SKUs: a combination is switched off (启用), never deleted
    fields = [
        "pick",
        "specs_display",
        "image_file",
        "price_fen",
        "member_price_fen",
        "stock",
        "stock_change",
        "code",
        "weight_g",
        "is_active",
    ]
    readonly_fields = ["specs_display", "stock"]  # stock moves through "库存增减" (relative) only
    show_change_link = True

    @admin.display(description="规格")
    def specs_display(self, sku: Sku) -> str:
        return specs_text(sku.specs)

    def has_add_permission(self, request, obj=None):
        return False  # new rows come from the spec editor (one per missing combination)


@admin.register(Product)
class ProductAdmin(
    ProductBulkActionsMixin, ProductEditorMixin, ChangedFieldsAdmin
):  # changed fields only: never writes back ``sales`` or stock
    """The product editor (``apps.catalog.admin_editor``): cover and gallery uploaded with
    previews and drag order, specs as names and values generating the SKU matrix, counters
    read-only, a preview of the mini-program's detail page."""

    list_display = [
        "id",
        "cover_thumb",
        "name",
        "kind",
        "category",
        "price_range",
        "stock_total",
        "is_active",
        "is_hot",
        "is_recommended",
        "sales",
        "sort",
    ]
    list_filter = ["kind", "category", "is_active", "is_hot", "is_recommended", "freight_template"]
    search_fields = ["name"]  # also the 秒杀 / 拼团 / 砍价 forms' product autocomplete
    ordering = ["sort", "id"]
    readonly_fields = ["sales", "review_count", "rating_total", "created_at", "cover_preview", "mini_preview"]
    inlines = [SkuInline]


class SkuForm(forms.ModelForm):
    stock_change = forms.IntegerField(
        required=False,
        initial=0,
        label="库存增减",
        help_text="补货填正数，减少填负数。按 库存 = 库存 + n 执行，不会覆盖期间被订单占用的数量。",
    )

    # Optional on this page: left out or empty keeps the SKU's value (freight by weight/volume).
    weight_g = forms.IntegerField(
        label="重量（克）", required=False, min_value=0, help_text="克/件（按重量计费的运费模板用）"
    )
    volume_cm3 = forms.IntegerField(
        label="体积（立方厘米）", required=False, min_value=0, help_text="立方厘米/件（按体积计费的运费模板用）"
    )

    class Meta:
        model = Sku
        fields = ["product", "specs", "price_fen", "member_price_fen", "code", "weight_g", "volume_cm3", "is_active"]

    def clean_weight_g(self):
        value = self.cleaned_data["weight_g"]
        return self.instance.weight_g if value is None else value

    def clean_volume_cm3(self):
        value = self.cleaned_data["volume_cm3"]
        return self.instance.volume_cm3 if value is None else value


@admin.register(Sku)
class SkuAdmin(admin.ModelAdmin):
    """The SKU page. ``stock_change`` (relative, through ``sku_stock_adjust``) needs
    ``catalog.change_stock``; the other fields need ``catalog.change_sku``. A holder of only
    one of them sees the other part read-only."""

    form = SkuForm
    list_display = ["id", "__str__", "price_fen", "stock", "is_active"]
    list_filter = ["is_active", "product__kind"]
    search_fields = ["product__name", "code"]
    readonly_fields = ["stock"]
    raw_id_fields = ["product"]

    def _may_edit(self, request) -> bool:
        return super().has_change_permission(request)

    def has_change_permission(self, request, obj=None):
        return self._may_edit(request) or request.user.has_perm(CHANGE_STOCK)

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and not self._may_edit(request):
            return [
                "product",
                "specs",
                "price_fen",
                "member_price_fen",
                "code",
                "weight_g",
                "volume_cm3",
                "is_active",
                "stock",
            ]
        return self.readonly_fields

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        if not request.user.has_perm(CHANGE_STOCK):
            form.base_fields.pop("stock_change", None)
        return form

    def save_model(self, request, obj, form, change):
        # Never save the stock value read when the page was opened: orders may have taken units.
        if change:
            save_changed_fields(obj, form.changed_data)
        else:
            obj.save()
        delta = form.cleaned_data.get("stock_change") or 0
        if not delta:
            return
        if not request.user.has_perm(CHANGE_STOCK):  # checked again: a hand-made POST
            messages.error(request, f"{obj}: 库存未修改：需要 change_stock 权限")
            return
        try:
            obj.stock = stock.sku_stock_adjust(sku_id=obj.pk, delta=delta)
        except InsufficientStock as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"库存已调整 {delta:+d}，现为 {obj.stock}。")


@admin.register(Teacher)
class TeacherAdmin(ChangedFieldsAdmin):
    list_display = ["id", "name", "title", "product", "is_active"]
    list_filter = ["is_active"]
    search_fields = ["name"]
