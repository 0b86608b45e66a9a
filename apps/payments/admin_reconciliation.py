"""Back office for the daily reconciliation against WeChat's bill (read-only, plus a rerun).

Imported by ``apps/payments/admin.py``. Amounts are shown in yuan (``starmall.admin_money.yuan``).
"""

import datetime as dt

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from apps.payments import reconciliation
from apps.payments.models import ReconciliationRun
from starmall.admin import require_perm
from starmall.admin_money import yuan
from starmall.errors import InvalidInput, ShopError

KIND_LABELS = reconciliation.KIND_LABELS


@admin.register(ReconciliationRun)
class ReconciliationRunAdmin(admin.ModelAdmin):
    list_display = [
        "bill_date",
        "status",
        "running",
        "wechat_count",
        "local_count",
        "wechat_fen",
        "local_fen",
        "gap_fen",
        "difference_count",
        "alerted",
        "checked_at",
    ]
    list_filter = ["status", "alerted"]
    date_hierarchy = "bill_date"
    fields = [
        "bill_date",
        "status",
        "running",
        "started_by",
        "wechat_count",
        "local_count",
        "wechat_fen",
        "local_fen",
        "gap_fen",
        "difference_count",
        "differences_table",
        "error",
        "alerted",
        "checked_at",
    ]
    readonly_fields = fields
    actions = ["reconcile_again"]
    money_actions = ["reconcile"]  # who may: apps/backoffice/roles.py MONEY_ACTIONS
    list_before_template = "admin/starmall/reconcile_list_top.html"
    change_form_outer_before_template = "admin/starmall/role_hints.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.reconcile_now_view)
        return [path("now/", view, name="payments_reconciliationrun_now")] + super().get_urls()

    def reconcile_now_view(self, request):
        """GET: the date form (default yesterday, Beijing); POST ``bill_date``: THE start service
        (``reconciliation.reconcile_start``: the worker reconciles), then the day's page."""
        if not request.user.has_perm(reconciliation.PERMISSION):
            raise PermissionDenied(f"需要权限 {reconciliation.PERMISSION}")
        bill_date = request.POST.get("bill_date") or reconciliation.previous_day().isoformat()
        if request.method == "POST":
            try:
                run = reconciliation.reconcile_start(bill_date=_date(bill_date), user=request.user)
            except ShopError as exc:
                messages.error(request, f"未开始对账：{exc.message}")
            else:
                messages.success(request, f"{run.bill_date} 已开始对账，完成后本页显示结果和差异数（刷新查看）。")
                return redirect(reverse("admin:payments_reconciliationrun_change", args=[run.pk]))
        context = {**self.admin_site.each_context(request), "title": "立即对账", "bill_date": bill_date}
        return render(request, "admin/starmall/reconcile_now.html", context)

    @admin.display(description="进行中")
    def running(self, run: ReconciliationRun) -> str:
        """ "对账中（开始于 HH:MM）" while a run staff started has not stored its result, else "-"."""
        if run.running_since is None:
            return "-"
        return f"对账中（开始于 {timezone.localtime(run.running_since):%m-%d %H:%M}）"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="微信 - 本地（元）")
    def gap_fen(self, run: ReconciliationRun) -> str:
        return yuan(run.wechat_fen - run.local_fen)

    @admin.display(description="差异数")
    def difference_count(self, run: ReconciliationRun) -> int:
        return len(run.differences or [])

    @admin.display(description="差异明细")
    def differences_table(self, run: ReconciliationRun) -> str:
        if not run.differences:
            return "—"
        head = format_html_join(
            "",
            "<th>{}</th>",
            (
                (h,)
                for h in ("类型", "商户订单号", "退款单号", "微信金额（元）", "本地金额（元）", "微信状态", "本地状态")
            ),
        )
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    KIND_LABELS.get(d.get("kind"), d.get("kind")),
                    d.get("out_trade_no") or "—",
                    d.get("out_refund_no") or "—",
                    yuan(d.get("wechat_fen")),
                    yuan(d.get("local_fen")),
                    d.get("wechat_status") or "—",
                    d.get("local_status") or "—",
                )
                for d in run.differences
            ),
        )
        return format_html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>", head, rows)

    def has_reconcile_permission(self, request):
        return request.user.has_perm("payments.run_reconciliation")

    @admin.action(description="重新对账这一天", permissions=["reconcile"])
    def reconcile_again(self, request, queryset):
        require_perm(request, "payments.run_reconciliation")
        for bill_date in queryset.order_by("bill_date").values_list("bill_date", flat=True):
            run = reconciliation.reconcile(bill_date=bill_date)
            level = messages.SUCCESS if run.status == ReconciliationRun.Status.OK else messages.WARNING
            detail = (
                run.error
                if run.status == ReconciliationRun.Status.ERROR
                else (f"{len(run.differences)} 处差异，微信 {yuan(run.wechat_fen)} 元，本地 {yuan(run.local_fen)} 元")
            )
            messages.add_message(request, level, f"{bill_date}: {run.get_status_display()} — {detail}")


def _date(text: str) -> dt.date:
    """``YYYY-MM-DD`` -> date; anything else is InvalidInput."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"日期格式不正确：{text}（应为 YYYY-MM-DD）。") from None
