"""打印小票 and 电子面单 in the order pages: the order page's two buttons and its print jobs,
and the list's two bulk actions (:class:`PrintActions`, mixed into the order admin).

Every click is ``apps.printing.services.print_job_request`` with the staff user, which checks
``printing.print_order`` (a waybill also ``orders.ship_order``: it ships the order); the pages
only offer what the user may do. A ticket goes to every active printer; asking again finds the
job already made (重打 is the print job list's).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse

from apps.orders.models import Order
from apps.printing import services
from apps.printing.models import Printer, PrintJob
from starmall.admin import Outcome, report, require_perm
from starmall.errors import ShopError


def _actor(request) -> str:
    return f"staff:{request.user.username}"


def may_ticket(user) -> bool:
    return user.has_perm(services.PERMISSION)


def may_waybill(user) -> bool:
    return user.has_perm(services.PERMISSION) and user.has_perm(services.SHIP_PERMISSION)


def summary(user, order: Order) -> dict:
    """The order page's part: ``can_print_ticket``, ``can_waybill``, ``print_jobs`` (newest
    first, with their list link) and the two form URLs."""
    jobs = (
        list(order.print_jobs.select_related("printer").order_by("-id")[:10])
        if user.has_perm("printing.view_printjob")
        else []
    )
    return {
        "can_print_ticket": may_ticket(user),
        "can_waybill": may_waybill(user) and services.waybill_possible(order),
        "print_jobs": jobs,
        "print_urls": {
            "ticket": reverse("admin:orders_order_print_ticket", args=[order.pk]),
            "waybill": reverse("admin:orders_order_waybill", args=[order.pk]),
            "jobs": reverse("admin:printing_printjob_changelist") + f"?q={order.order_no}",
        },
    }


def ticket(request, order: Order) -> Outcome:
    """打印小票 for one order: a job per active printer, as an action's outcome."""
    printers = list(Printer.objects.filter(active=True).order_by("id"))
    if not printers:
        return Outcome(order.order_no, messages.WARNING, "未打印：没有启用的打印机（打印与面单 › 小票打印机）")
    texts = []
    try:
        for printer in printers:
            job, made = services.print_job_request(
                order=order, kind=PrintJob.Kind.TICKET, printer=printer, actor=_actor(request), user=request.user
            )
            texts.append(f"{printer.name}：{'已提交打印' if made else '已打印过（需要再打一张请用「重打」）'}")
    except ShopError as exc:
        return Outcome(order.order_no, messages.WARNING, f"未打印：{exc.message}")
    return Outcome(order.order_no, messages.SUCCESS, "；".join(texts))


def waybill(request, order: Order) -> Outcome:
    """电子面单 for one order: the waybill job (it ships the order when the number comes)."""
    try:
        job, made = services.print_job_request(
            order=order, kind=PrintJob.Kind.LABEL, actor=_actor(request), user=request.user
        )
    except ShopError as exc:
        return Outcome(order.order_no, messages.WARNING, f"未下单：{exc.message}")
    if made:
        return Outcome(order.order_no, messages.SUCCESS, "电子面单已提交，取号后自动发货")
    return Outcome(order.order_no, messages.WARNING, f"已有电子面单任务（{job.get_status_display()}）")


def _back(order: Order):
    return redirect(reverse("admin:orders_order_change", args=[order.pk]))


def _page(request, object_id: int, run, may) -> object:
    order = get_object_or_404(Order, pk=object_id)
    if request.method != "POST":
        return _back(order)
    if not may(request.user):
        raise PermissionDenied("需要权限 " + services.PERMISSION)
    outcome = run(request, order)
    messages.add_message(request, outcome.level, f"{order.order_no}：{outcome.text}")
    return _back(order)


def ticket_view(request, object_id: int):
    """POST: 打印小票 (``printing.print_order``)."""
    return _page(request, object_id, ticket, may_ticket)


def waybill_view(request, object_id: int):
    """POST: 电子面单 (``printing.print_order`` and ``orders.ship_order``)."""
    return _page(request, object_id, waybill, may_waybill)


class PrintActions:
    """The order list's bulk 打印小票 and 电子面单 (each order in id order, one message each)."""

    def has_print_order_permission(self, request):
        return may_ticket(request.user)

    def has_waybill_permission(self, request):
        return may_waybill(request.user)

    @admin.action(description="打印小票（所有启用的打印机）", permissions=["print_order"])
    def print_tickets(self, request, queryset):
        require_perm(request, services.PERMISSION)
        report(request, "打印小票", [ticket(request, order) for order in queryset.order_by("pk")])

    @admin.action(description="电子面单（取号并发货）", permissions=["waybill"])
    def order_waybills(self, request, queryset):
        require_perm(request, services.PERMISSION)
        require_perm(request, services.SHIP_PERMISSION)
        report(request, "电子面单", [waybill(request, order) for order in queryset.order_by("pk")])
