from django import forms
from django.contrib import admin, messages

from apps.catalog import services
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Category, Product, Sku, Teacher


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "parent", "kind", "sort"]
    list_filter = ["kind"]


class SkuInline(admin.TabularInline):
    model = Sku
    extra = 0
    fields = ["specs", "price_fen", "stock", "code", "is_active"]
    readonly_fields = ["stock"]  # stock moves through the SKU page's "stock change" field only
    show_change_link = True


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "kind", "category", "is_active", "sales", "sort"]
    list_filter = ["kind", "category", "is_active"]
    search_fields = ["name"]
    readonly_fields = ["sales", "created_at"]
    inlines = [SkuInline]


class SkuForm(forms.ModelForm):
    stock_change = forms.IntegerField(
        required=False, initial=0,
        help_text="Units to add (restock) or, negative, to remove. Applied as stock = stock + n.",
    )

    class Meta:
        model = Sku
        fields = ["product", "specs", "price_fen", "code", "is_active"]


@admin.register(Sku)
class SkuAdmin(admin.ModelAdmin):
    form = SkuForm
    list_display = ["id", "__str__", "price_fen", "stock", "is_active"]
    list_filter = ["is_active", "product__kind"]
    search_fields = ["product__name", "code"]
    readonly_fields = ["stock"]
    raw_id_fields = ["product"]

    def save_model(self, request, obj, form, change):
        # Never save the stock value read when the page was opened: orders may have taken units.
        if change:
            obj.save(update_fields=["product", "specs", "price_fen", "code", "is_active"])
        else:
            obj.save()
        delta = form.cleaned_data.get("stock_change") or 0
        if delta:
            try:
                obj.stock = services.sku_stock_adjust(sku_id=obj.pk, delta=delta)
            except InsufficientStock as exc:
                messages.error(request, exc.message)
            else:
                messages.info(request, f"Stock changed by {delta:+d}; now {obj.stock}.")


@admin.register(Teacher)
class TeacherAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "title", "product", "is_active"]
    list_filter = ["is_active"]
    search_fields = ["name"]
