"""The order and refund-request pages with the actions that span orders and payments (cancel
after asking WeChat, batch refund, the payment-state column, the after-sale decisions).

Registered here, above both apps, as django-oscar's dashboard does: the base admins (pages,
shipping, completing) stay in ``apps.orders.admin``, which may not import payments. Admin URLs
(``admin:orders_order_changelist`` ...), action names, labels and permissions are the orders
app's, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Subquery
from django.shortcuts import redirect, render
from django.urls import path, reverse

from apps.backoffice import estimated_count, order_printing, order_search, order_shipping_info, order_workbench
from apps.backoffice.per_page import PerPageMixin
from apps.backoffice.range_dates import range_dates
from apps.orders import admin as orders_admin
from apps.orders.admin import staff_actor, status_now
from apps.orders.models import AfterSale, Order, OrderStatus
from apps.payments import order_lifecycle, refund_batches, refunds, returns, shipping_info, staff_limits
from apps.payments.admin_refund_batches import message_created
from apps.payments.exceptions import OrderNotCancelled
from apps.payments.models import Payment, PaymentStatus
from starmall.admin import Outcome, report, require_perm
from starmall.admin_money import yuan
from starmall.errors import ShopError

CANCEL_REFUSED = {
    "paid": "未取消：微信显示已支付，订单已标记为已支付",
    "paying": "未取消：用户正在支付，请稍后再试",
}

PENDING_ONLY = "只能处理待审核的申请"


@admin.register(Order)
class OrderAdmin(PerPageMixin, order_printing.PrintActions, orders_admin.OrderAdmin):
    """Orders with the payment state column and the actions that call payments (and printing's
    打印小票 / 电子面单: ``apps.backoffice.order_printing``)."""

    # Fits 1,366 px without sideways scrolling (apps/backoffice/static/backoffice/admin.css):
    # kind, method and times are on the order page and in the filters.
    list_display = [
        "order_no",
        "customer",
        "receiver",
        "status",
        "pay_status",
        "pay_fen",
        "shipping_info_state",
        "after_sale_status",
        "created_at",
    ]
    actions = [
        "ship_with_tracking",
        "mark_shipped",
        "mark_completed",
        "cancel_unpaid",
        "batch_refund",
        "reupload_shipping_info",
        "print_tickets",
        "order_waybills",
    ]
    list_filter = [
        order_workbench.OrderTabFilter,
        "status",
        "kind",
        "pay_method",
        order_shipping_info.ShippingInfoFilter,
    ]
    # the search box; what it looks at and how: get_search_results (apps.backoffice.order_search)
    search_fields = ["order_no"]
    search_help_text = order_search.HELP_TEXT
    # a million orders: page links from an estimate, no second count (apps.backoffice.estimated_count)
    paginator = estimated_count.EstimatedCountPaginator
    show_full_result_count = False
    # 20 rows open the list (one screen), ?per=50 / 100 under it (apps.backoffice.per_page)
    list_per_page = 20
    list_before_template = "admin/starmall/order_tabs.html"
    change_list_template = "admin/starmall/change_list_rows.html"  # the rows made once per page
    change_form_outer_before_template = "admin/starmall/order_summary.html"  # outside the page's form: its own forms
    # the summary above shows lines, shipment, refunds and log compactly; the follow-ups stay below
    inlines = [orders_admin.FollowUpInline]
    fieldsets = [
        (
            "全部字段",
            {
                "classes": ["collapse"],
                "fields": [
                    "order_no",
                    "status",
                    "kind",
                    "customer",
                    "ship_link",
                    "delivery_address",
                    "slot",
                    "remark",
                    "merchant_remark",
                    "goods_fen",
                    "freight_fen",
                    "coupon_fen",
                    "points_fen",
                    "adjust_fen",
                    "member_fen",
                    "points_used",
                    "pay_fen",
                    "pay_method",
                    "coupon",
                    "flash_sale",
                    "created_at",
                    "pay_deadline",
                    "paid_at",
                    "shipped_at",
                    "completed_at",
                    "cancelled_at",
                    "cancel_reason",
                ],
            },
        ),
    ]

    def changelist_view(self, request, extra_context=None):
        """The list with the workbench's status tabs and their counts above it."""
        return super().changelist_view(
            request, {**(extra_context or {}), "order_tabs": order_workbench.tabs_context(request)}
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The compact order page: the summary (customer, lines, money, shipment, refunds, log,
        the workbench forms this user may use) above the collapsed field list."""
        extra = dict(extra_context or {})
        order = self.get_object(request, object_id)
        if order is not None and self.has_view_or_change_permission(request, order):
            extra["order_summary"] = {
                **order_workbench.summary_context(request, order),
                **order_shipping_info.summary(request.user, order),
                **order_printing.summary(request.user, order),
            }
        return super().change_view(request, object_id, form_url, extra)

    def get_object(self, request, object_id, from_field=None):
        """The order read once per request: the page's summary (``change_view``) and Django's
        form view both ask for it."""
        read = request.__dict__.setdefault("_orders_read", {})
        if (object_id, from_field) not in read:
            read[object_id, from_field] = super().get_object(request, object_id, from_field)
        return read[object_id, from_field]

    def get_urls(self):
        wrap = self.admin_site.admin_view
        site = self.admin_site
        return [
            path("<int:object_id>/remark/", wrap(order_workbench.remark_view), name="orders_order_remark"),
            path("<int:object_id>/price/", wrap(order_workbench.price_view), name="orders_order_price"),
            path("<int:object_id>/address/", wrap(order_workbench.address_view), name="orders_order_address"),
            path(
                "<int:object_id>/shipping-info/",
                wrap(order_shipping_info.reupload_view),
                name="orders_order_shipping_info",
            ),
            path("<int:object_id>/shipment/", wrap(order_shipping_info.shipment_view), name="orders_order_shipment"),
            path("<int:object_id>/print-ticket/", wrap(order_printing.ticket_view), name="orders_order_print_ticket"),
            path("<int:object_id>/waybill/", wrap(order_printing.waybill_view), name="orders_order_waybill"),
            path(
                "<int:object_id>/slip/",
                wrap(lambda request, object_id: order_workbench.slip_view(request, object_id, site)),
                name="orders_order_slip",
            ),
        ] + super().get_urls()

    def get_queryset(self, request):
        latest = Payment.objects.filter(order=OuterRef("pk")).order_by("-id").values("status")[:1]
        queryset = (
            super()
            .get_queryset(request)
            .annotate(latest_pay_status=Subquery(latest))
            # the customer too: a select_related here replaces list_select_related
            .select_related("shipping_info", "customer")
        )
        return range_dates(queryset)  # the date drill-down from MIN/MAX, not a scan

    def get_search_results(self, request, queryset, search_term):
        """Order number, phones, tracking number exactly; receiver's name and nickname by their
        start: index lookups only (``apps.backoffice.order_search``), never duplicates."""
        return order_search.order_search(queryset, search_term), False

    @admin.display(description="收货人")
    def receiver(self, order):
        """The receiver's name and phone, as the order page shows them ("-" without an address)."""
        return order_search.receiver_text(order)

    @admin.display(description="发货信息")
    def shipping_info_state(self, order):
        """WeChat's shipping information: 已上传 / 未上传 / 上传失败 with the last error; "-"
        when there is nothing to report (balance payment, not delivered yet)."""
        return order_shipping_info.state_text(getattr(order, "shipping_info", None))

    def has_upload_shipping_info_permission(self, request):
        return request.user.has_perm(shipping_info.PERMISSION)

    @admin.action(description="重新上传发货信息（微信发货信息管理）", permissions=["upload_shipping_info"])
    def reupload_shipping_info(self, request, queryset):
        """THE re-upload service per selected order (a new version each, uploaded by the worker)."""
        require_perm(request, shipping_info.PERMISSION)
        report(
            request,
            "重新上传发货信息",
            [order_shipping_info.reupload(request, order) for order in queryset.order_by("pk")],
        )

    @admin.display(description="支付状态")
    def pay_status(self, order):
        """The latest payment's state label ("已支付", "待支付"...), "-" without a payment."""
        value = getattr(order, "latest_pay_status", None)
        return PaymentStatus(value).label if value else "-"

    def has_batch_refund_permission(self, request):
        return request.user.has_perm("payments.batch_refund")

    @admin.action(description="批量退款", permissions=["batch_refund"])
    def batch_refund(self, request, queryset):
        """A confirmation page (each order's refundable amount, the reason), then THE batch
        service (``apps.payments.refund_batches``) and the batch's page."""
        require_perm(request, refund_batches.PERMISSION)
        orders = list(queryset.order_by("pk"))
        if request.POST.get("apply"):
            try:
                batch = refund_batches.refund_batch_create(
                    order_nos=[o.order_no for o in orders], reason=request.POST.get("text", ""), user=request.user
                )
            except ShopError as exc:
                messages.error(request, exc.message)
                return None
            message_created(request, batch)
            return redirect(reverse("admin:payments_refundbatch_change", args=[batch.pk]))
        rows = refund_batches.refund_batch_preview(orders)
        for row in rows:
            row["pay_yuan"], row["refundable_yuan"] = yuan(row["order"].pay_fen), yuan(row["refundable_fen"])
        refundable = [row["refundable_fen"] for row in rows if not row["refusal"]]
        return render(
            request,
            "admin/starmall/refund_batch_confirm.html",
            {
                **self.admin_site.each_context(request),
                "title": "批量退款",
                "rows": rows,
                "refundable_count": len(refundable),
                "total_yuan": yuan(sum(refundable)),
                "back_url": reverse("admin:orders_order_changelist"),
            },
        )

    @admin.action(description="取消订单（待支付；先向微信确认并关单）", permissions=["cancel"])
    def cancel_unpaid(self, request, queryset):
        require_perm(request, "orders.cancel_order")
        report(request, "取消", [self._cancel(request, order) for order in queryset.order_by("pk")])

    def _cancel(self, request, order: Order) -> Outcome:
        if order.status != OrderStatus.UNPAID:
            return Outcome(
                order.order_no,
                messages.WARNING,
                f"未取消：订单状态为「{order.get_status_display()}」，只有待支付的订单可以取消",
            )
        try:  # THE cancel: WeChat is asked (and the trade closed) before the order is
            order_lifecycle.order_cancel(order=order, actor=staff_actor(request), reason="后台取消")
        except OrderNotCancelled as exc:
            if exc.outcome == "raced":
                return Outcome(order.order_no, messages.WARNING, f"未取消：订单状态已变为「{status_now(order)}」")
            return Outcome(
                order.order_no,
                messages.WARNING if exc.outcome == "paid" else messages.ERROR,
                CANCEL_REFUSED[exc.outcome],
            )
        except ShopError as exc:
            return Outcome(order.order_no, messages.ERROR, f"未取消：{exc.message}")
        return Outcome(order.order_no, messages.SUCCESS, "已取消")


def _require_approve(request) -> None:
    """PermissionDenied (a hand-made POST) unless the user may approve some refund request."""
    if not staff_limits.may_approve_refund(request.user):
        raise PermissionDenied(f"需要权限 {staff_limits.REFUND_ANY} 或 {staff_limits.REFUND_LIMITED}")


def _sale_refused(sale: AfterSale, verb: str, rule: str) -> Outcome:
    """A refund request the service left alone: "未<verb>：申请状态为「<status now>」，<rule>"
    (the status read again: the action's copy may be stale)."""
    sale.refresh_from_db(fields=["status"])
    return Outcome(sale.refund_no, messages.WARNING, f"未{verb}：申请状态为「{sale.get_status_display()}」，{rule}")


def _decide_each(
    request,
    queryset,
    *,
    title: str,
    run: Callable[[AfterSale], object],
    done: Callable[[object], str],
    refused: tuple[str, str],
    failed: tuple[int, str] | None = None,
) -> None:
    """Run one after-sale service per selected request (in id order) and report the outcomes.

    ``run(sale)`` returns something truthy when it acted (then ``done(result)`` is the success
    message) or a falsy value when the request was not in the right state (then "未<verb>：申请
    状态为「…」，<rule>" from ``refused = (verb, rule)``). ``failed = (level, prefix)`` turns a
    ShopError into "<prefix>：<message>" at that level; without it the error propagates.
    """
    outcomes = []
    for sale in queryset.order_by("pk"):
        try:
            result = run(sale)
        except ShopError as exc:
            if failed is None:
                raise
            outcomes.append(Outcome(sale.refund_no, failed[0], f"{failed[1]}：{exc.message}"))
            continue
        outcomes.append(
            Outcome(sale.refund_no, messages.SUCCESS, done(result)) if result else _sale_refused(sale, *refused)
        )
    report(request, title, outcomes)


@admin.register(AfterSale)
class AfterSaleAdmin(orders_admin.AfterSaleAdmin):
    """Refund requests with the decisions, each calling the payments service that owns it."""

    actions = ["approve", "approve_return", "confirm_return_received", "reject_with_reason", "reject"]
    money_actions = ["refund", "reject_refund"]  # who may: roles.MONEY_ACTIONS, shown by role_hints.html
    list_before_template = change_form_outer_before_template = "admin/starmall/role_hints.html"

    def has_approve_permission(self, request):
        """Any amount (财务) or up to SERVICE_REFUND_LIMIT_FEN (客服): the service checks the amount."""
        return staff_limits.may_approve_refund(request.user)

    @admin.action(description="同意退货（已发货的实物：顾客先寄回）", permissions=["approve"])
    def approve_return(self, request, queryset):
        _require_approve(request)
        if not request.POST.get("apply"):
            return self._text_form(
                request,
                queryset,
                action="approve_return",
                title="同意退货",
                label="给顾客的说明（退货地址、注意事项）",
                required=False,
            )
        note = request.POST.get("text", "").strip()
        _decide_each(
            request,
            queryset,
            title="同意退货",
            run=lambda sale: returns.after_sale_approve_return(
                after_sale_id=sale.pk, actor=staff_actor(request), note=note, user=request.user
            ),
            done=lambda _: "已同意退货，等待顾客寄回",
            refused=("同意退货", PENDING_ONLY),
            failed=(messages.WARNING, "未同意退货"),
        )
        return None

    @admin.action(description="确认收到退货并退款（全部退回时回库存）", permissions=["receive"])
    def confirm_return_received(self, request, queryset):
        require_perm(request, "orders.receive_return")
        _decide_each(
            request,
            queryset,
            title="确认收到退货",
            run=lambda sale: returns.after_sale_return_received(after_sale_id=sale.pk, actor=staff_actor(request)),
            done=lambda refund: (
                f"已收到退货，退款 {yuan(refund.refund_fen)} 元已提交" + ("，商品已回库存" if refund.restock else "")
            ),
            refused=("退款", "需要「退货中」"),
            failed=(messages.ERROR, "未退款"),
        )

    @admin.action(description="拒绝退款并填写原因（顾客可见）", permissions=["decide"])
    def reject_with_reason(self, request, queryset):
        require_perm(request, "orders.decide_aftersale")
        if not request.POST.get("apply"):
            return self._text_form(
                request,
                queryset,
                action="reject_with_reason",
                title="拒绝退款",
                label="拒绝原因（顾客可见）",
                required=True,
            )
        note = request.POST.get("text", "").strip() or "不符合退款条件"
        _decide_each(
            request,
            queryset,
            title="拒绝退款",
            run=lambda sale: refunds.after_sale_reject(after_sale_id=sale.pk, actor=staff_actor(request), note=note),
            done=lambda _: f"已拒绝：{note}",
            refused=("拒绝", "只能拒绝未退款的申请"),
        )
        return None

    @admin.action(description="同意退款（原路退回微信或余额）", permissions=["approve"])
    def approve(self, request, queryset):
        _require_approve(request)
        _decide_each(
            request,
            queryset,
            title="同意退款",
            run=lambda sale: refunds.after_sale_approve(
                after_sale_id=sale.pk, actor=staff_actor(request), user=request.user
            ),
            done=lambda refund: f"已同意，退款 {yuan(refund.refund_fen)} 元已提交",
            refused=("同意", PENDING_ONLY),
            failed=(messages.ERROR, "未同意"),
        )

    @admin.action(description="拒绝退款", permissions=["decide"])
    def reject(self, request, queryset):
        require_perm(request, "orders.decide_aftersale")
        _decide_each(
            request,
            queryset,
            title="拒绝退款",
            run=lambda sale: refunds.after_sale_reject(
                after_sale_id=sale.pk, actor=staff_actor(request), note="不符合退款条件"
            ),
            done=lambda _: "已拒绝",
            refused=("拒绝", PENDING_ONLY),
        )
