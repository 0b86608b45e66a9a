"""Back office for coupons and the daily sign-in, through the marketing services.

* Coupon templates (Django's own add/change permissions): amounts in yuan (``YuanAdminMixin``,
  stored as fen); checked by ``coupons.coupon_template_validate``, saved by
  ``coupons.coupon_template_save`` (only changed columns; never ``issued``; a lower ``total`` conditionally).
* Coupon issues (handing coupons out): add one = ``coupons.coupon_issue_start``, needing
  ``marketing.issue_coupon`` (checked when offered and again on save); one customer is done at
  once, a filter runs in the background and the page shows its progress.
* Sign-in rules: the day -> points table (``apps.marketing.signin``); sign-ins are read-only.
"""

from django import forms
from django.contrib import admin, messages

from apps.marketing import coupons, signin
from apps.marketing.models import CouponIssue, CouponTemplate, SignIn, SignInRule
from starmall.admin import ChangedFieldsAdmin, ReadOnlyModelAdmin, require_perm
from starmall.admin_display import coupon_terms_text, percent_off_from_zhe, shanghai, zhe_text
from starmall.errors import InvalidInput, NotFound

ISSUE = "marketing.issue_coupon"


class ZheField(forms.Field):
    """The discount as staff say it: "9" / "9折" / "8.5" -> the stored percent off (10 / 10 / 15)."""

    def to_python(self, value):
        if value in self.empty_values or str(value).strip() == "0":  # an amount coupon: no discount
            return 0
        try:
            return percent_off_from_zhe(value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from exc

    def prepare_value(self, value):
        if isinstance(value, int) and 1 <= value <= 99:
            return zhe_text(value).removesuffix("折")
        return value


class CouponTemplateForm(forms.ModelForm):
    percent = ZheField(
        label="折扣（几折）",
        required=False,
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
        help_text="折扣券：填几折，例如 9（9折，减 10%）或 8.5（8.5折）",
    )

    class Meta:
        model = CouponTemplate
        fields = [
            "name",
            "kind",
            "amount_fen",
            "percent",
            "max_discount_fen",
            "threshold_fen",
            "scope",
            "categories",
            "products",
            "valid_from",
            "valid_to",
            "valid_days",
            "total",
            "per_customer",
            "occasion",
            "is_active",
        ]
        help_texts = {
            "occasion": "新人券：首次登录自动赠送；生日券：生日当天自动赠送（每年一张）；积分商城兑换券：只能用积分兑换。三者顾客都不能直接领取",
            "valid_from": "北京时间；空 = 领取即可用",
            "valid_to": "北京时间；设置“领取后有效天数”时只截止领取",
            "valid_days": "领取后有效天数（优先于固定有效期）",
            "total": "最多发放张数",
            "per_customer": "每人最多自己领取张数（后台发放不计入）",
        }

    def clean(self):
        data = super().clean()
        data["amount_fen"] = data.get("amount_fen") or 0
        data["threshold_fen"] = data.get("threshold_fen") or 0
        try:
            coupons.coupon_template_validate(
                kind=data.get("kind"),
                amount_fen=data["amount_fen"],
                percent=data.get("percent"),
                max_discount_fen=data.get("max_discount_fen"),
                valid_from=data.get("valid_from"),
                valid_to=data.get("valid_to"),
                valid_days=data.get("valid_days"),
                total=data.get("total"),
                scope=data.get("scope"),
                categories=data.get("categories") or (),
                products=data.get("products") or (),
                issued=self.instance.issued if self.instance.pk else 0,
            )
        except InvalidInput as exc:
            for field, problems in exc.detail.items():
                for problem in problems:
                    self.add_error(field if field in self.fields else None, problem)
        return data


@admin.register(CouponTemplate)
class CouponTemplateAdmin(ChangedFieldsAdmin):
    form = CouponTemplateForm
    list_display = ["name", "terms", "scope", "issued_of_total", "per_customer", "validity", "is_active"]
    list_filter = ["kind", "scope", "occasion", "is_active"]
    search_fields = ["name"]
    filter_horizontal = ["categories", "products"]
    readonly_fields = ["issued", "created_at"]

    @admin.display(description="优惠")
    def terms(self, template: CouponTemplate) -> str:
        return coupon_terms_text(
            kind=template.kind,
            amount_fen=template.amount_fen,
            percent=template.percent,
            max_discount_fen=template.max_discount_fen,
            threshold_fen=template.threshold_fen,
        )

    @admin.display(description="已发放 / 总量", ordering="issued")
    def issued_of_total(self, template: CouponTemplate) -> str:
        return f"{template.issued} / {template.total}"

    @admin.display(description="有效期")
    def validity(self, template: CouponTemplate) -> str:
        """ "领取后 30 天（2027-01-30 前领取）" or "至 2027-01-30 21:59" (Shanghai time)."""
        until = shanghai(template.valid_to)
        if template.valid_days:
            return f"领取后 {template.valid_days} 天" + (f"（{until} 前领取）" if template.valid_to else "")
        return f"至 {until}"

    def has_delete_permission(self, request, obj=None):
        return False  # coupons refer to it: switch it off (is_active) instead

    def save_model(self, request, obj, form, change):
        coupons.coupon_template_save(template=obj, changed=form.changed_data if change else [])

    def save_related(self, request, form, formsets, change):
        coupons.coupon_template_save(
            template=form.instance,
            changed=[],
            categories=form.cleaned_data.get("categories") or [],
            products=form.cleaned_data.get("products") or [],
        )


class CouponIssueForm(forms.ModelForm):
    class Meta:
        model = CouponIssue
        fields = ["template", "customer", "joined_after", "joined_before", "min_points"]
        help_texts = {
            "customer": "发给这一位顾客（立即完成）；留空 = 发给下面条件筛选出的所有顾客（后台执行）",
            "joined_after": "注册时间不早于（北京时间）",
            "joined_before": "注册时间早于（北京时间）",
            "min_points": "积分不少于",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "template" in self.fields:  # the add page (on the change page everything is read-only)
            self.fields["template"].queryset = CouponTemplate.objects.filter(is_active=True)


@admin.register(CouponIssue)
class CouponIssueAdmin(admin.ModelAdmin):
    form = CouponIssueForm
    list_display = [
        "id",
        "template",
        "customer",
        "status",
        "granted",
        "skipped",
        "created_by",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status"]
    raw_id_fields = ["customer"]
    list_select_related = ["template", "customer"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return [
            "template",
            "customer",
            "joined_after",
            "joined_before",
            "min_points",
            "status",
            "cursor",
            "granted",
            "skipped",
            "created_by",
            "created_at",
            "finished_at",
        ]

    def has_add_permission(self, request):
        return request.user.has_perm(ISSUE)

    def has_change_permission(self, request, obj=None):
        return False  # an issue is a record of what was handed out

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        require_perm(request, ISSUE)
        data = form.cleaned_data
        try:
            issue = coupons.coupon_issue_start(
                template_id=data["template"].pk,
                customer_id=data["customer"].pk if data.get("customer") else None,
                joined_after=data.get("joined_after"),
                joined_before=data.get("joined_before"),
                min_points=data.get("min_points"),
                created_by=request.user.get_username(),
            )
        except NotFound as exc:
            messages.error(request, exc.message)
            return
        obj.pk, obj.status, obj.created_at = issue.pk, issue.status, issue.created_at
        if issue.customer_id:
            messages.info(
                request,
                f"已发放 {issue.granted} 张"
                + ("（该顾客已领过本批次）" if not issue.granted else "")
                + (f"，{issue.skipped} 位因券已发完未发" if issue.skipped else ""),
            )
        else:
            messages.info(request, "已开始后台发放，刷新本页查看进度。")


@admin.register(SignInRule)
class SignInRuleAdmin(ChangedFieldsAdmin):
    """Day d of a streak earns ``points``; after the last day the cycle starts again at day 1."""

    list_display = ["day", "points"]
    ordering = ["day"]

    def save_model(self, request, obj, form, change):
        signin.sign_in_rule_save(
            rule=obj, changed=[f for f in form.changed_data if f in ("day", "points")] if change else None
        )


@admin.register(SignIn)
class SignInAdmin(ReadOnlyModelAdmin):
    list_display = ["customer", "date", "streak", "points", "created_at"]
    list_filter = ["date"]
    search_fields = ["customer__openid", "customer__nickname"]
    list_select_related = ["customer"]
