"""Staff schedule 拼团 activities and 砍价 campaigns here (through ``apps.marketing.group_buys`` /
``bargains``, the services the API uses) and read bargain records with their helps. Groups and
their members, with the action that ends a group (it refunds, so it lives at payments' level),
are in ``apps/payments/admin_groups.py``.

Adding or changing an activity needs ``marketing.manage_groupbuy``; a campaign
``marketing.manage_bargain`` (as ``manage_flashsale`` for 秒杀). Prices show and are entered in
yuan (the admin site's YuanAdminMixin), times in Beijing time.
"""

from django import forms
from django.contrib import admin, messages

from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Sku
from apps.marketing import bargains, group_buys
from apps.marketing.admin_sku_picker import ProductSkuAdminMixin, ProductSkuFormMixin, product_before_sku
from apps.marketing.models import BargainCampaign, BargainHelp, BargainRecord, GroupBuy
from starmall.admin import ReadOnlyModelAdmin
from starmall.errors import InvalidInput

MANAGE_GROUPBUY = "marketing.manage_groupbuy"
MANAGE_BARGAIN = "marketing.manage_bargain"
GROUP_BUY_TERMS = (
    "title",
    "price_fen",
    "hours",
    "starts_at",
    "ends_at",
    "limit_per_customer",
    "simulate",
    "simulate_min",
    "is_active",
)
BARGAIN_TERMS = ("title", "hours", "starts_at", "ends_at", "limit_per_customer", "is_active")


def _form_errors(form, exc: InvalidInput) -> None:
    for field, problems in exc.detail.items():
        for problem in problems:
            form.add_error(field if field in form.fields else None, problem)


class GroupBuyForm(ProductSkuFormMixin, forms.ModelForm):
    stock_change = forms.IntegerField(
        required=False, initial=0, label="拼团库存增减", help_text="增加的件数；负数为撤回。按 库存 = 库存 + n 执行。"
    )

    class Meta:
        model = GroupBuy
        fields = [
            "title",
            "sku",
            "price_fen",
            "stock",
            "group_size",
            "hours",
            "starts_at",
            "ends_at",
            "limit_per_customer",
            "simulate",
            "simulate_min",
            "is_active",
        ]
        help_texts = {
            "price_fen": "至少 0.01 元，且不高于该 SKU 的售价",
            "stock": "本次拼团的件数，不超过该 SKU 现有库存；每笔订单同时扣拼团库存和 SKU 库存",
            "hours": "团长付款后多少小时内成团，否则自动退款",
            "simulate": "到期时已付款人数达到下面的最少人数即视为成团（模拟成团）",
            "starts_at": "上海时间",
            "ends_at": "上海时间；结束后不能再开新团",
        }

    def clean(self):
        data = super().clean()
        activity = self.instance if self.instance.pk else None
        sku = activity.sku if activity else data.get("sku")
        if isinstance(sku, Sku):
            sku = Sku.objects.select_related("product").get(pk=sku.pk)
        try:
            group_buys.group_buy_validate(
                sku=sku,
                price_fen=data.get("price_fen"),
                stock=data.get("stock"),
                group_size=activity.group_size if activity else data.get("group_size"),
                hours=data.get("hours"),
                starts_at=data.get("starts_at"),
                ends_at=data.get("ends_at"),
                limit_per_customer=data.get("limit_per_customer"),
                simulate=data.get("simulate", False),
                simulate_min=data.get("simulate_min"),
                activity=activity,
            )
        except InvalidInput as exc:
            _form_errors(self, exc)
        return data


@admin.register(GroupBuy)
class GroupBuyAdmin(ProductSkuAdminMixin, admin.ModelAdmin):
    form = GroupBuyForm
    list_display = [
        "id",
        "title",
        "sku",
        "price_fen",
        "group_size",
        "hours",
        "stock",
        "sold",
        "starts_at",
        "ends_at",
        "limit_per_customer",
        "simulate",
        "is_active",
    ]
    list_filter = ["is_active", "simulate"]
    search_fields = ["title", "sku__product__name"]

    def get_readonly_fields(self, request, obj=None):
        return ["sku", "stock", "sold", "group_size", "created_at"] if obj else ["sold", "created_at"]

    def get_fields(self, request, obj=None):
        fields = list(GroupBuyForm.Meta.fields)
        return product_before_sku(fields + ["stock_change", "sold", "created_at"] if obj else fields, obj)

    def has_add_permission(self, request):
        return request.user.has_perm(MANAGE_GROUPBUY)

    def has_change_permission(self, request, obj=None):
        return request.user.has_perm(MANAGE_GROUPBUY)

    def has_delete_permission(self, request, obj=None):
        return False  # pause it instead: groups and orders refer to it

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        terms = {k: data[k] for k in GROUP_BUY_TERMS}
        if change:
            group_buys.group_buy_update(activity_id=obj.pk, **terms)
        else:
            activity = group_buys.group_buy_schedule(
                sku_id=data["sku"].pk, stock=data["stock"], group_size=data["group_size"], **terms
            )
            obj.pk, obj.created_at, obj.sold = activity.pk, activity.created_at, activity.sold
        delta = data.get("stock_change") or 0
        if change and delta:
            try:
                obj.stock = group_buys.group_buy_stock_adjust(activity_id=obj.pk, delta=delta)
            except InsufficientStock as exc:
                messages.error(request, exc.message)
            else:
                messages.info(request, f"拼团库存已调整 {delta:+d}，现为 {obj.stock}。")


class BargainCampaignForm(ProductSkuFormMixin, forms.ModelForm):
    class Meta:
        model = BargainCampaign
        fields = [
            "title",
            "sku",
            "original_price_fen",
            "floor_price_fen",
            "helpers_needed",
            "hours",
            "starts_at",
            "ends_at",
            "stock",
            "limit_per_customer",
            "is_active",
        ]
        help_texts = {
            "floor_price_fen": "砍到第「所需人数」刀时正好到底价；每刀至少 0.01 元",
            "stock": "本次砍价的件数，不超过该 SKU 现有库存",
            "hours": "发起后多少小时内可砍价、购买",
            "starts_at": "上海时间",
            "ends_at": "上海时间",
        }

    def clean(self):
        data = super().clean()
        campaign = self.instance if self.instance.pk else None
        sku = data.get("sku")
        if isinstance(sku, Sku):
            sku = Sku.objects.select_related("product").get(pk=sku.pk)
        try:
            bargains.bargain_validate(
                sku=sku,
                original_price_fen=data.get("original_price_fen"),
                floor_price_fen=data.get("floor_price_fen"),
                helpers_needed=data.get("helpers_needed"),
                hours=data.get("hours"),
                starts_at=data.get("starts_at"),
                ends_at=data.get("ends_at"),
                stock=data.get("stock"),
                limit_per_customer=data.get("limit_per_customer"),
                campaign=campaign,
            )
        except InvalidInput as exc:
            _form_errors(self, exc)
        return data


@admin.register(BargainCampaign)
class BargainCampaignAdmin(ProductSkuAdminMixin, admin.ModelAdmin):
    form = BargainCampaignForm
    list_display = [
        "id",
        "title",
        "sku",
        "original_price_fen",
        "floor_price_fen",
        "helpers_needed",
        "hours",
        "stock",
        "sold",
        "starts_at",
        "ends_at",
        "is_active",
    ]
    list_filter = ["is_active"]
    search_fields = ["title", "sku__product__name"]

    def get_readonly_fields(self, request, obj=None):
        if obj:
            return ["sku", "original_price_fen", "floor_price_fen", "helpers_needed", "stock", "sold", "created_at"]
        return ["sold", "created_at"]

    def has_add_permission(self, request):
        return request.user.has_perm(MANAGE_BARGAIN)

    def has_change_permission(self, request, obj=None):
        return request.user.has_perm(MANAGE_BARGAIN)

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        terms = {k: data[k] for k in BARGAIN_TERMS}
        if change:
            bargains.bargain_update(campaign_id=obj.pk, **terms)
        else:
            campaign = bargains.bargain_schedule(
                sku_id=data["sku"].pk,
                original_price_fen=data["original_price_fen"],
                floor_price_fen=data["floor_price_fen"],
                helpers_needed=data["helpers_needed"],
                stock=data["stock"],
                **terms,
            )
            obj.pk, obj.created_at, obj.sold = campaign.pk, campaign.created_at, campaign.sold


class BargainHelpInline(admin.TabularInline):
    model = BargainHelp
    fields = ["helper", "cut_fen", "day", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(BargainRecord)
class BargainRecordAdmin(ReadOnlyModelAdmin):
    """Records and their helps; written only by the services (start, help, buy, expiry)."""

    list_display = [
        "bargain_no",
        "campaign",
        "customer",
        "price_fen",
        "floor_price_fen",
        "helpers",
        "helpers_needed",
        "status",
        "expires_at",
        "order_no",
        "created_at",
    ]
    list_filter = ["status", "campaign"]
    search_fields = ["bargain_no", "order_no", "customer__nickname"]
    list_select_related = ["campaign", "customer"]
    inlines = [BargainHelpInline]
