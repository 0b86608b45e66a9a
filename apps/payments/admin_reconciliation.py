"""Back office for the daily reconciliation against WeChat's bill (read-only, plus a rerun).

Imported by ``apps/payments/admin.py``. Amounts are shown in yuan (``starmall.admin_money.yuan``).
"""

from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from apps.payments import reconciliation
from apps.payments.models import ReconciliationRun
from starmall.admin import require_perm
from starmall.admin_money import yuan

KIND_LABELS = reconciliation.KIND_LABELS


@admin.register(ReconciliationRun)
class ReconciliationRunAdmin(admin.ModelAdmin):
    list_display = [
        "bill_date",
        "status",
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
