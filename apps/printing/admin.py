"""Back office of printing: the printers staff configure, and the print jobs with 重试 / 重打.

The order pages' 打印小票 and 电子面单 (buttons and bulk actions) are
``apps.backoffice.order_printing``'s; every click goes through ``apps.printing.services`` with
the same permission (``printing.print_order``; a waybill also ``orders.ship_order``)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from apps.printing import services
from apps.printing.models import Printer, PrintJob
from starmall.admin import Outcome, ReadOnlyModelAdmin, report, require_perm
from starmall.admin_display import actor_text
from starmall.errors import ShopError


@admin.register(Printer)
class PrinterAdmin(admin.ModelAdmin):
    list_display = ["name", "provider", "sn", "copies", "active", "print_on_payment", "created_at"]
    list_filter = ["provider", "active", "print_on_payment"]
    fields = ["name", "provider", "sn", "key", "copies", "active", "print_on_payment"]


@admin.register(PrintJob)
class PrintJobAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "order_link", "kind", "printer", "status", "attempts", "result", "who", "created_at"]
    list_filter = ["status", "kind", "printer"]
    search_fields = ["order__order_no", "tracking_no"]
    list_select_related = ["order", "printer"]
    actions = ["retry", "reprint"]
    readonly_fields = [
        "key",
        "order",
        "kind",
        "printer",
        "status",
        "attempts",
        "requested_by",
        "note",
        "error",
        "carrier_code",
        "tracking_no",
        "label_link",
        "answer",
        "content_text",
        "created_at",
        "done_at",
    ]
    fields = readonly_fields

    @admin.display(description="订单", ordering="order__order_no")
    def order_link(self, job):
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:orders_order_change", args=[job.order_id]), job.order.order_no
        )

    @admin.display(description="结果")
    def result(self, job):
        """The note (已打印 / 已发货 / why not), the tracking number, or the last error."""
        text = job.error if job.status == PrintJob.Status.FAILED else job.note
        if job.tracking_no:
            text = f"{job.tracking_no} {text}"
        return text[:80] or "-"

    @admin.display(description="发起人")
    def who(self, job):
        return actor_text(job.requested_by)

    @admin.display(description="面单")
    def label_link(self, job):
        return format_html('<a href="{}" target="_blank">打开面单</a>', job.label_url) if job.label_url else "-"

    @admin.display(description="打印内容")
    def content_text(self, job):
        return format_html("<pre>{}</pre>", job.content.replace("<BR>", "\n")) if job.content else "-"

    def has_print_order_permission(self, request):
        return request.user.has_perm(services.PERMISSION)

    @admin.action(description="重试（失败的任务，原样再发一次）", permissions=["print_order"])
    def retry(self, request, queryset):
        require_perm(request, services.PERMISSION)
        outcomes = []
        for job in queryset.order_by("pk"):
            done = services.print_job_retry(job_id=job.pk, user=request.user)
            outcomes.append(
                Outcome(str(job), messages.SUCCESS, "已重新提交")
                if done
                else Outcome(
                    str(job), messages.WARNING, f"未重试：状态为「{job.get_status_display()}」，只能重试失败的任务"
                )
            )
        report(request, "重试", outcomes)

    @admin.action(description="重打小票（新任务，再打印一张）", permissions=["print_order"])
    def reprint(self, request, queryset):
        require_perm(request, services.PERMISSION)
        outcomes = []
        for job in queryset.order_by("pk"):
            try:
                made = services.print_job_reprint(job=job, actor=f"staff:{request.user.username}", user=request.user)
            except ShopError as exc:
                outcomes.append(Outcome(str(job), messages.WARNING, f"未重打：{exc.message}"))
                continue
            outcomes.append(Outcome(str(job), messages.SUCCESS, f"已提交重打（{made}）"))
        report(request, "重打", outcomes)
