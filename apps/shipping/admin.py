"""Freight templates in the back office: the template, its region rules and free-shipping rules
on one page. Provinces are ticked by name (China's 34 provincial-level divisions,
``apps.shipping.regions``), cities typed by name; amounts in yuan (stored in fen: the site's
``YuanAdminMixin``, labels from the models).

Everything here needs ``shipping.change_freighttemplate`` (adding a template:
``add_freighttemplate``). The default template cannot be deleted or un-defaulted: tick
"默认" on another one instead (``freight_template_make_default``).
"""

from django import forms
from django.contrib import admin, messages

from apps.shipping import services
from apps.shipping.models import FreeShippingRule, FreightMode, FreightRegionRule, FreightTemplate
from apps.shipping.regions import PROVINCE_CHOICES, city_key
from starmall.admin import ChangedFieldsAdmin, save_changed_fields
from starmall.admin_money import yuan
from starmall.errors import InvalidState

CHANGE = "shipping.change_freighttemplate"
UNITS = "件数 / 克 / 立方厘米（按计费方式）"


class ProvincesField(forms.MultipleChoiceField):
    """Provinces ticked by name, stored as a list of full names."""

    def __init__(self, **kwargs):
        kwargs.setdefault("choices", PROVINCE_CHOICES)
        kwargs.setdefault("widget", forms.CheckboxSelectMultiple(attrs={"class": "province-checkboxes"}))
        super().__init__(**kwargs)


class CitiesField(forms.CharField):
    """City names typed by staff, separated by commas, 、 or new lines; stored as a list."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.TextInput(attrs={"size": 60}))
        kwargs.setdefault("help_text", "可选：只对所选省份中的这些城市生效，如“深圳市，广州市”；留空 = 整个省份")
        super().__init__(**kwargs)

    def prepare_value(self, value):
        return "，".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        text = super().to_python(value) or ""
        for separator in "，,、;；\n\r":
            text = text.replace(separator, " ")
        names = []
        for name in text.split():
            if city_key(name) not in map(city_key, names):
                names.append(name)
        return names

    def has_changed(self, initial, data) -> bool:
        return self.to_python(data) != list(initial or [])


class RegionRuleForm(forms.ModelForm):
    provinces = ProvincesField(label="省份")
    cities = CitiesField(label="城市")

    class Meta:
        model = FreightRegionRule
        fields = ["provinces", "cities", "first_fee_fen", "extra_fee_fen"]


class FreeRuleForm(forms.ModelForm):
    provinces = ProvincesField(label="省份", required=False, help_text="不勾选 = 全国")
    cities = CitiesField(label="城市")
    min_count = forms.IntegerField(label="满件数", required=False, min_value=1, help_text="该模板商品件数达到此数包邮")

    class Meta:
        model = FreeShippingRule
        fields = ["provinces", "cities", "min_amount_fen", "min_count"]

    def clean(self):
        data = super().clean()
        if data.get("min_amount_fen") is None and data.get("min_count") is None and not data.get("DELETE"):
            # On the field, not the form: the admin theme's tabular inline shows field errors only.
            self.add_error("min_amount_fen", "请填写满金额或满件数（都填则需同时满足）。")
        return data


class _GatedInline(admin.StackedInline):
    """Rules are part of their template: editable with the template's change permission."""

    extra = 0

    def has_view_permission(self, request, obj=None):
        return request.user.has_perm("shipping.view_freighttemplate") or request.user.has_perm(CHANGE)

    def has_add_permission(self, request, obj=None):
        return request.user.has_perm(CHANGE)

    def has_change_permission(self, request, obj=None):
        return request.user.has_perm(CHANGE)

    def has_delete_permission(self, request, obj=None):
        return request.user.has_perm(CHANGE)


class RegionRuleInline(_GatedInline):
    model = FreightRegionRule
    form = RegionRuleForm
    verbose_name = "指定区域运费"
    verbose_name_plural = "指定区域运费（覆盖默认首费/续费；城市规则优先于省份规则）"


class FreeRuleInline(_GatedInline):
    model = FreeShippingRule
    form = FreeRuleForm
    verbose_name = "包邮条件"
    verbose_name_plural = "包邮条件（按区域，满金额和/或满件数）"


class FreightTemplateForm(forms.ModelForm):
    class Meta:
        model = FreightTemplate
        fields = ["name", "mode", "first_unit", "first_fee_fen", "extra_unit", "extra_fee_fen", "is_default"]
        help_texts = {
            "first_unit": f"首费包含的数量，单位：{UNITS}",
            "extra_unit": f"每满（不足也算）这么多收一次续费，单位：{UNITS}",
            "is_default": "未指定运费模板的商品使用默认模板；勾选后原默认模板变为普通模板",
        }

    def _get_validation_exclusions(self):
        # The one-default constraint is kept by the service that moves the flag (save_model).
        return super()._get_validation_exclusions() | {"is_default"}

    def clean_is_default(self):
        value = self.cleaned_data["is_default"]
        if self.instance.pk and self.instance.is_default and not value:
            raise forms.ValidationError("商店必须有一个默认运费模板：请在另一个模板上勾选“默认模板”。")
        return value


@admin.register(FreightTemplate)
class FreightTemplateAdmin(ChangedFieldsAdmin):
    form = FreightTemplateForm
    inlines = [RegionRuleInline, FreeRuleInline]
    list_display = ["name", "mode", "first", "extra", "regions", "free", "is_default", "product_count"]
    list_filter = ["mode", "is_default"]
    search_fields = ["name"]

    class Media:
        css = {"all": ["shipping/admin.css"]}

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("region_rules", "free_rules", "products")

    @admin.display(description="首费")
    def first(self, obj):
        return f"{obj.first_unit}{_unit(obj.mode)} {yuan(obj.first_fee_fen)} 元"

    @admin.display(description="续费")
    def extra(self, obj):
        return f"每 {obj.extra_unit}{_unit(obj.mode)} {yuan(obj.extra_fee_fen)} 元"

    @admin.display(description="指定区域")
    def regions(self, obj):
        return (
            "；".join(
                f"{_where(rule)}: {yuan(rule.first_fee_fen)}/{yuan(rule.extra_fee_fen)}"
                for rule in obj.region_rules.all()
            )
            or "-"
        )

    @admin.display(description="包邮")
    def free(self, obj):
        texts = []
        for rule in obj.free_rules.all():
            terms = [
                f"满 {yuan(rule.min_amount_fen)} 元" if rule.min_amount_fen is not None else "",
                f"满 {rule.min_count} 件" if rule.min_count is not None else "",
            ]
            texts.append(f"{_where(rule)}: {' 且 '.join(t for t in terms if t)}")
        return "；".join(texts) or "-"

    @admin.display(description="商品数")
    def product_count(self, obj):
        return len(obj.products.all())

    def has_change_permission(self, request, obj=None):
        return request.user.has_perm(CHANGE)

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_default:
            return False  # the shop always has a default template
        return super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        make_default = form.cleaned_data.get("is_default") and not (change and form.initial.get("is_default"))
        if make_default:  # through the service, after the rest is saved (one default at a time)
            obj.is_default = False
            changed = [name for name in form.changed_data if name != "is_default"]
        else:
            changed = form.changed_data
        if change:
            save_changed_fields(obj, changed)
        else:
            obj.save()
        if make_default:
            try:
                services.freight_template_make_default(template_id=obj.pk)
            except InvalidState as exc:
                messages.error(request, exc.message)
            else:
                obj.is_default = True
                messages.success(request, f"“{obj.name}”现在是默认运费模板。")


def _unit(mode: str) -> str:
    return {FreightMode.PIECE: "件", FreightMode.WEIGHT: "克", FreightMode.VOLUME: "cm³"}.get(mode, "")


def _where(rule) -> str:
    """Short region text for lists: 新疆维吾尔自治区、西藏自治区 / 浙江省等 32 个省份 / 全国."""
    names = rule.cities or rule.provinces
    if not names:
        return "全国"
    return "、".join(names) if len(names) <= 3 else f"{names[0]}等 {len(names)} 个{'城市' if rule.cities else '省份'}"
