"""Back office for customer tags and coupons issued to a tag, through the services (the pages:
docs/BACKOFFICE.md "Members: tags, coupons to a tag, the points mall").

* Tags (``members.Tag``): the rule editor, checked by ``members.tags.tag_validate``; "按规则立即更新"
  runs ``crm.tag_rules.tag_rule_apply`` (what beat runs hourly). Django's own tag permissions.
* The customer list (accounts): a tag filter, actions "打标签" / "去掉标签" (``members.tags.customers_tag`` /
  ``customers_untag``; permissions ``members.add_customertag`` / ``members.delete_customertag``).
* Coupons to a tag: ``crm.tag_coupons.tag_coupon_issue_start`` (``marketing.issue_coupon``, checked when
  offered and again on save); the list shows ``granted`` and ``skipped`` (the template ran out).
"""

from django import forms
from django.contrib import admin, messages
from unfold.forms import ActionForm

from apps.accounts.models import Customer
from apps.crm import tag_coupons, tag_rules
from apps.crm.models import TagCouponIssue
from apps.marketing.models import CouponTemplate
from apps.members import tags
from apps.members.models_tags import CustomerTag, Tag
from starmall.admin import require_perm
from starmall.errors import InvalidInput, NotFound

ISSUE = "marketing.issue_coupon"
TAG_ADD = "members.add_customertag"
TAG_DELETE = "members.delete_customertag"


class TagForm(forms.ModelForm):
    class Meta:
        model = Tag
        fields = ["name", "rule", "rule_spent_fen", "rule_days", "rule_product", "is_active"]

    def clean(self):
        data = super().clean()
        try:
            tags.tag_validate(
                rule=data.get("rule"),
                rule_spent_fen=data.get("rule_spent_fen"),
                rule_days=data.get("rule_days"),
                rule_product_id=data["rule_product"].pk if data.get("rule_product") else None,
            )
        except InvalidInput as exc:
            for field, problems in exc.detail.items():
                self.add_error(field, problems)
        return data


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    form = TagForm
    list_display = ["name", "rule", "rule_spent_fen", "rule_days", "rule_product", "customers", "evaluated_at"]
    list_filter = ["rule", "is_active"]
    search_fields = ["name"]
    raw_id_fields = ["rule_product"]
    readonly_fields = ["evaluated_at", "created_at"]
    actions = ["evaluate"]

    @admin.display(description="顾客数")
    def customers(self, tag: Tag) -> int:
        return tag.customer_tags.count()

    @admin.action(description="按规则立即更新所选标签", permissions=["change"])
    def evaluate(self, request, queryset):
        require_perm(request, "members.change_tag")
        for tag in queryset:
            added, removed = tag_rules.tag_rule_apply(tag_id=tag.pk)
            messages.info(request, f"{tag.name}：新增 {added} 位，移除 {removed} 位")


@admin.register(CustomerTag)
class CustomerTagAdmin(admin.ModelAdmin):
    """Who carries which tag; add one = tag a customer by hand (UNIQUE: twice is once)."""

    list_display = ["customer", "tag", "source", "created_at"]
    list_filter = ["tag", "source"]
    search_fields = ["customer__openid", "customer__nickname", "customer__phone"]
    raw_id_fields = ["customer"]
    list_select_related = ["customer", "tag"]
    fields = ["customer", "tag"]

    def has_change_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        require_perm(request, TAG_ADD)
        added = tags.customers_tag(tag_id=obj.tag_id, customer_ids=[obj.customer_id])
        row = CustomerTag.objects.get(tag_id=obj.tag_id, customer_id=obj.customer_id)
        obj.pk, obj.source, obj.created_at = row.pk, row.source, row.created_at
        if not added:
            messages.info(request, "该顾客已有此标签。")


# --- the customer list (registered by accounts): a tag filter and tag actions ----------------


class CustomerTagFilter(admin.SimpleListFilter):
    title = "标签"
    parameter_name = "tag"

    def lookups(self, request, model_admin):
        return [(str(pk), name) for pk, name in Tag.objects.values_list("pk", "name")]

    def queryset(self, request, queryset):
        if self.value() and self.value().isdigit():
            return queryset.filter(pk__in=CustomerTag.objects.filter(tag_id=self.value()).values("customer_id"))
        return queryset


class CustomerActionForm(ActionForm):
    tag = forms.ModelChoiceField(label="标签", queryset=Tag.objects.all(), required=False, empty_label="选择标签")


@admin.action(description="给所选顾客打标签（在右侧选择标签）", permissions=["tag"])
def customers_tag(modeladmin, request, queryset):
    _tag_action(request, queryset, add=True)


@admin.action(description="去掉所选顾客的标签（在右侧选择标签）", permissions=["untag"])
def customers_untag(modeladmin, request, queryset):
    _tag_action(request, queryset, add=False)


def _tag_action(request, queryset, *, add: bool) -> None:
    require_perm(request, TAG_ADD if add else TAG_DELETE)
    chosen = request.POST.get("tag", "")
    tag = Tag.objects.filter(pk=int(chosen)).first() if chosen.isdigit() else None
    if tag is None:
        messages.error(request, "请先在操作旁选择一个标签。")
        return
    ids = list(queryset.values_list("pk", flat=True))
    if add:
        changed = tags.customers_tag(tag_id=tag.pk, customer_ids=ids)
        messages.success(request, f"已给 {changed} 位顾客打上“{tag.name}”（{len(ids) - changed} 位原已有）。")
    else:
        changed = tags.customers_untag(tag_id=tag.pk, customer_ids=ids)
        messages.success(request, f"已从 {changed} 位顾客去掉“{tag.name}”。")


def _extend_customer_admin() -> None:
    """Accounts sits below members: the tag filter and actions are added to its customer list here."""
    customer_admin = admin.site._registry.get(Customer)
    if customer_admin is None or CustomerTagFilter in customer_admin.list_filter:
        return
    customer_admin.list_filter = [*customer_admin.list_filter, CustomerTagFilter]
    customer_admin.actions = [*customer_admin.actions, customers_tag, customers_untag]
    customer_admin.action_form = CustomerActionForm
    customer_admin.has_tag_permission = lambda request: request.user.has_perm(TAG_ADD)
    customer_admin.has_untag_permission = lambda request: request.user.has_perm(TAG_DELETE)


_extend_customer_admin()


# --- coupons to a tag -------------------------------------------------------------------------


class TagCouponIssueForm(forms.ModelForm):
    class Meta:
        model = TagCouponIssue
        fields = ["tag", "template"]
        help_texts = {"tag": "发给带有此标签的所有顾客（后台执行，每位顾客每次发券最多一张）"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "template" in self.fields:
            self.fields["template"].queryset = CouponTemplate.objects.filter(is_active=True)


@admin.register(TagCouponIssue)
class TagCouponIssueAdmin(admin.ModelAdmin):
    form = TagCouponIssueForm
    list_display = ["id", "tag", "template", "status", "granted", "skipped", "created_by", "created_at", "finished_at"]
    list_filter = ["status"]
    list_select_related = ["tag", "template"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["tag", "template", "status", "cursor", "granted", "skipped", "created_by", "created_at", "finished_at"]

    def has_add_permission(self, request):
        return request.user.has_perm(ISSUE)

    def has_change_permission(self, request, obj=None):
        return False  # a record of what was handed out

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        require_perm(request, ISSUE)
        try:
            issue = tag_coupons.tag_coupon_issue_start(
                tag_id=form.cleaned_data["tag"].pk,
                template_id=form.cleaned_data["template"].pk,
                created_by=request.user.get_username(),
            )
        except NotFound as exc:
            messages.error(request, exc.message)
            return
        obj.pk, obj.status, obj.created_at = issue.pk, issue.status, issue.created_at
        messages.info(request, "已开始后台发放，刷新本页查看进度（已发放 / 未发放人数）。")
