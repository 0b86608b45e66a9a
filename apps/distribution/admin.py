"""Back office for distribution (分销): distributors and their teams, commissions and the
ledger, rates, the withdrawal queue (approve / reject with a reason / query the transfer),
merchant transfers, channel codes (渠道二维码) and exports. Money is shown in yuan (the site's
YuanAdminMixin), times in Beijing time. Every action calls the same service as the API and
``manage.py withdrawals`` with the same permission (``distribution.decide_withdrawal``)."""

from __future__ import annotations

import csv

from django.contrib import admin, messages
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html

from apps.distribution import codes, transfers, withdrawals
from apps.distribution.models import (
    Channel,
    Commission,
    CommissionSettings,
    Distributor,
    LedgerEntry,
    ProductCommission,
    PromotionCode,
    TransferBill,
    Withdrawal,
)
from apps.files.services import media_url
from starmall.admin import Outcome, ReadOnlyModelAdmin, report, require_perm
from starmall.admin_display import shanghai
from starmall.admin_money import yuan, yuan_amount
from starmall.errors import ShopError
from starmall.spreadsheet import safe_row


def _csv(filename: str, header: list[str], rows) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response.write("\ufeff")  # Excel opens UTF-8 Chinese correctly with a BOM
    writer = csv.writer(response)
    writer.writerow(header)
    for row in rows:
        writer.writerow(safe_row(row))
    return response


class TeamInline(admin.TabularInline):
    model = Distributor
    fk_name = "referrer"
    fields = ["customer", "referral_code", "bound_at", "frozen_fen", "available_fen"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name = "一级团队成员"
    verbose_name_plural = "一级团队"

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Distributor)
class DistributorAdmin(ReadOnlyModelAdmin):
    list_display = [
        "customer",
        "referral_code",
        "referrer",
        "channel",
        "team_size",
        "frozen_fen",
        "available_fen",
        "withdrawn_fen",
        "created_at",
    ]
    list_select_related = ["customer", "referrer__customer", "channel"]
    search_fields = ["referral_code", "customer__nickname", "customer__openid"]
    list_filter = ["channel"]
    inlines = [TeamInline]
    actions = ["export_csv"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(team_count=Count("team"))

    @admin.display(description="一级团队人数", ordering="team_count")
    def team_size(self, obj) -> int:
        return obj.team_count

    @admin.action(description="导出所选分销员（CSV）", permissions=["view"])
    def export_csv(self, request, queryset):
        rows = (
            [
                d.customer.nickname,
                d.referral_code,
                d.referrer.referral_code if d.referrer_id else "",
                d.team_count,
                yuan_amount(d.frozen_fen),
                yuan_amount(d.available_fen),
                yuan_amount(d.withdrawn_fen),
                shanghai(d.created_at),
            ]
            for d in queryset.order_by("id")
        )
        return _csv(
            "distributors.csv",
            ["昵称", "推广码", "上级推广码", "一级团队人数", "冻结（元）", "可提现（元）", "已提现（元）", "加入时间"],
            rows,
        )


@admin.register(CommissionSettings)
class CommissionSettingsAdmin(admin.ModelAdmin):
    """The shop's two rates (one row). 1000 = 10 %."""

    list_display = ["__str__", "level1_rate_bp", "level2_rate_bp", "enabled"]

    def has_add_permission(self, request):
        return not CommissionSettings.objects.exists() and super().has_add_permission(request)

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ProductCommission)
class ProductCommissionAdmin(admin.ModelAdmin):
    list_display = ["product", "level1_rate_bp", "level2_rate_bp"]
    raw_id_fields = ["product"]
    search_fields = ["product__name"]


@admin.register(Commission)
class CommissionAdmin(ReadOnlyModelAdmin):
    list_display = [
        "order",
        "level",
        "distributor",
        "base_fen",
        "amount_fen",
        "reversed_fen",
        "status",
        "created_at",
        "available_at",
    ]
    list_filter = ["status", "level"]
    list_select_related = ["order", "distributor__customer"]
    search_fields = ["order__order_no", "distributor__referral_code", "distributor__customer__nickname"]
    date_hierarchy = "created_at"
    actions = ["export_csv"]

    @admin.action(description="导出所选佣金（CSV）", permissions=["view"])
    def export_csv(self, request, queryset):
        rows = (
            [
                c.order.order_no,
                c.level,
                c.distributor.customer.nickname,
                c.distributor.referral_code,
                yuan_amount(c.base_fen),
                yuan_amount(c.amount_fen),
                yuan_amount(c.reversed_fen),
                c.get_status_display(),
                shanghai(c.created_at),
                shanghai(c.available_at),
            ]
            for c in queryset.select_related("order", "distributor__customer").order_by("id")
        )
        return _csv(
            "commissions.csv",
            [
                "订单号",
                "级别",
                "获得者",
                "推广码",
                "计佣金额（元）",
                "佣金（元）",
                "已退回（元）",
                "状态",
                "创建时间",
                "解冻时间",
            ],
            rows,
        )


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyModelAdmin):
    list_display = [
        "created_at",
        "distributor",
        "reason",
        "ref",
        "available_delta_fen",
        "frozen_delta_fen",
        "withdrawn_delta_fen",
    ]
    list_filter = ["reason"]
    list_select_related = ["distributor__customer"]
    search_fields = ["ref", "distributor__referral_code"]


class TransferInline(admin.StackedInline):
    model = TransferBill
    fields = [
        "out_bill_no",
        "state",
        "wechat_state",
        "transfer_bill_no",
        "amount_fen",
        "attempts",
        "queries",
        "fail_reason",
        "last_error",
        "created_at",
        "finished_at",
    ]
    readonly_fields = fields
    can_delete = False
    extra = 0

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Withdrawal)
class WithdrawalAdmin(ReadOnlyModelAdmin):
    """The queue: filter 待审核, then 批准 (one merchant transfer each) or 驳回 (with a reason,
    the amount goes back); 查询转账 asks WeChat about approved ones."""

    list_display = [
        "withdrawal_no",
        "distributor",
        "amount_fen",
        "status",
        "transfer_state",
        "reason",
        "created_at",
        "decided_by",
        "decided_at",
        "settled_at",
    ]
    list_filter = ["status"]
    list_select_related = ["distributor__customer", "transfer"]
    search_fields = ["withdrawal_no", "distributor__referral_code", "distributor__customer__nickname"]
    date_hierarchy = "created_at"
    inlines = [TransferInline]
    actions = ["approve", "reject", "query_transfer", "export_csv"]
    money_actions = ["withdrawal"]  # who may: apps/backoffice/roles.py MONEY_ACTIONS (role_hints.html)
    list_before_template = change_form_outer_before_template = "admin/starmall/role_hints.html"

    @admin.display(description="转账状态")
    def transfer_state(self, obj) -> str:
        bill = getattr(obj, "transfer", None)
        return bill.get_state_display() if bill else "-"

    def has_decide_permission(self, request):
        return request.user.has_perm(withdrawals.PERMISSION)

    @admin.action(description="批准所选提现（发起微信商家转账）", permissions=["decide"])
    def approve(self, request, queryset):
        """A confirmation page (amount, payee, channel of each); only its confirm button approves."""
        require_perm(request, withdrawals.PERMISSION)
        if not request.POST.get("confirm"):
            return self._approve_confirm(request, list(queryset.select_related("distributor__customer").order_by("pk")))
        outcomes = []
        for w in queryset.order_by("pk"):
            try:
                withdrawals.withdrawal_approve(withdrawal_no=w.withdrawal_no, user=request.user)
                outcomes.append(Outcome(w.withdrawal_no, messages.SUCCESS, "已批准，商家转账已发起"))
            except ShopError as exc:
                outcomes.append(Outcome(w.withdrawal_no, messages.WARNING, f"未批准：{exc.message}"))
        report(request, "批准提现", outcomes)

    def _approve_confirm(self, request, selected: list[Withdrawal]):
        pending = [w for w in selected if w.status == Withdrawal.Status.PENDING]
        return render(
            request,
            "admin/starmall/money_confirm.html",
            {
                **self.admin_site.each_context(request),
                "title": "确认批准提现",
                "intro": "批准后立即向微信发起商家转账（转到收款人的微信零钱），钱一经转出不能撤回。不是待审核的提现不会转账。",
                "headers": ["提现单号", "状态", "收款人", "收款 openid", "金额（元）", "渠道"],
                "rows": [
                    [
                        w.withdrawal_no,
                        w.get_status_display(),
                        w.distributor.customer.nickname or "-",
                        w.distributor.customer.openid,
                        yuan(w.amount_fen),
                        "微信商家转账到零钱",
                    ]
                    for w in selected
                ],
                "total": f"共 {len(selected)} 笔，待审核 {len(pending)} 笔，合计转出 {yuan(sum(w.amount_fen for w in pending))} 元。",
                "form_action": "",
                "hidden": [("action", "approve")] + [("_selected_action", w.pk) for w in selected],
                "confirm_label": "确认批准并转账",
                "back_url": reverse("admin:distribution_withdrawal_changelist"),
            },
        )

    @admin.action(description="驳回所选提现（填写原因，佣金退回）", permissions=["decide"])
    def reject(self, request, queryset):
        require_perm(request, withdrawals.PERMISSION)
        if "apply" not in request.POST:
            return render(
                request,
                "admin/starmall/text_action.html",
                {
                    **self.admin_site.each_context(request),
                    "title": "驳回提现",
                    "label": "驳回原因（顾客可见）",
                    "action": "reject",
                    "objects": list(queryset.order_by("pk")),
                    "required": True,
                },
            )
        reason = request.POST.get("text", "")
        outcomes = []
        for w in queryset.order_by("pk"):
            try:
                withdrawals.withdrawal_reject(withdrawal_no=w.withdrawal_no, reason=reason, user=request.user)
                outcomes.append(Outcome(w.withdrawal_no, messages.SUCCESS, "已驳回，金额已退回可提现佣金"))
            except ShopError as exc:
                outcomes.append(Outcome(w.withdrawal_no, messages.WARNING, f"未驳回：{exc.message}"))
        report(request, "驳回提现", outcomes)

    @admin.action(description="向微信查询转账（结果未知时先查询再重发）", permissions=["decide"])
    def query_transfer(self, request, queryset):
        require_perm(request, withdrawals.PERMISSION)
        outcomes = []
        for w in queryset.select_related("transfer").order_by("pk"):
            bill = getattr(w, "transfer", None)
            if bill is None:
                outcomes.append(Outcome(w.withdrawal_no, messages.WARNING, "没有转账单（未批准）"))
                continue
            state = transfers.transfer_query_now(bill_id=bill.pk)
            level = messages.SUCCESS if state not in ("sending", "new") else messages.WARNING
            outcomes.append(
                Outcome(
                    w.withdrawal_no,
                    level,
                    f"转账状态：{TransferBill.State(state).label}" if state in TransferBill.State.values else state,
                )
            )
        report(request, "查询转账", outcomes)

    @admin.action(description="导出所选提现（CSV）", permissions=["view"])
    def export_csv(self, request, queryset):
        rows = (
            [
                w.withdrawal_no,
                w.distributor.customer.nickname,
                yuan_amount(w.amount_fen),
                w.get_status_display(),
                w.reason,
                w.decided_by,
                shanghai(w.created_at),
                shanghai(w.decided_at),
                shanghai(w.settled_at),
            ]
            for w in queryset.select_related("distributor__customer").order_by("id")
        )
        return _csv(
            "withdrawals.csv",
            ["提现单号", "顾客", "金额（元）", "状态", "原因", "审核人", "申请时间", "审核时间", "结束时间"],
            rows,
        )


@admin.register(TransferBill)
class TransferBillAdmin(ReadOnlyModelAdmin):
    list_display = [
        "out_bill_no",
        "amount_fen",
        "state",
        "wechat_state",
        "transfer_bill_no",
        "attempts",
        "queries",
        "created_at",
        "finished_at",
    ]
    list_filter = ["state"]
    search_fields = ["out_bill_no", "transfer_bill_no"]


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    """Channel codes: staff name a channel and a code (letters and digits); 生成小程序码 makes its
    image (scene ``c=<code>``); scans and first logins through it are counted."""

    list_display = ["name", "code", "visits", "registrations", "code_image", "created_at"]
    fields = ["name", "code", "visits", "registrations", "code_image"]
    readonly_fields = ["visits", "registrations", "code_image"]
    search_fields = ["name", "code"]
    actions = ["make_images"]

    def get_readonly_fields(self, request, obj=None):
        fixed = ["code"] if obj is not None else []  # printed codes carry it: never changed
        return [*super().get_readonly_fields(request, obj), *fixed]

    @admin.display(description="小程序码")
    def code_image(self, obj) -> str:
        if not obj or not obj.image:
            return "-"
        return format_html('<a href="{}" target="_blank">查看 / 下载</a>', media_url(obj.image))

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="生成所选渠道的小程序码", permissions=["change"])
    def make_images(self, request, queryset):
        outcomes = []
        for channel in queryset.order_by("pk"):
            try:
                codes.channel_code_image(channel=channel)
                outcomes.append(Outcome(channel.name, messages.SUCCESS, "小程序码已生成"))
            except ShopError as exc:
                outcomes.append(Outcome(channel.name, messages.ERROR, exc.message))
        report(request, "生成小程序码", outcomes)


@admin.register(PromotionCode)
class PromotionCodeAdmin(ReadOnlyModelAdmin):
    list_display = ["scene", "page", "storage_name", "created_at"]
    search_fields = ["scene"]
