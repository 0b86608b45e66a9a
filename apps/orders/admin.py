"""Back office for orders and refund requests: read-only pages, state moved only by actions
that call the API's services and are gated by named permissions (README "Back office").

``OrderAdmin`` and ``AfterSaleAdmin`` here hold what orders alone can do; the actions and
columns that need payments (cancel, refunds, the payment state) are added by the subclasses
that ``apps.backoffice.admin_orders`` registers (orders sits below payments)."""

from django.contrib import admin, messages
from django.db.models import OuterRef, Subquery
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.html import format_html

from apps.catalog.models import Kind
from apps.logistics import carriers
from apps.orders import pickup, services, shipments
from apps.orders.models import AfterSale, FollowUp, Order, OrderEvent, OrderLine, OrderStatus, Shipment
from starmall.admin import Outcome, ReadOnlyModelAdmin, report, require_perm
from starmall.admin_display import actor_text, address_text, specs_text
from starmall.errors import ShopError


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class OrderLineInline(ReadOnlyInline):
    model = OrderLine
    fields = ["name", "specs_display", "sku", "price_fen", "quantity", "amount_fen"]
    readonly_fields = ["specs_display"]

    @admin.display(description="规格")
    def specs_display(self, line):
        return specs_text(line.specs)


@admin.display(description="操作人")
def event_actor(event: OrderEvent) -> str:
    return actor_text(event.actor)


class OrderEventInline(ReadOnlyInline):
    model = OrderEvent
    fields = ["created_at", "from_status", "to_status", event_actor, "note"]
    readonly_fields = ["created_at", event_actor]


class FollowUpInline(ReadOnlyInline):
    model = FollowUp
    fields = ["kind", "status", "attempts", "last_error", "created_at", "done_at"]
    readonly_fields = ["created_at"]


class ShipmentInline(ReadOnlyInline):
    model = Shipment
    fields = ["carrier", "tracking_no", "shipped_at", "shipped_by"]
    readonly_fields = fields


class AfterSaleInline(ReadOnlyInline):
    model = AfterSale
    fields = [
        "refund_no",
        "status",
        "amount_fen",
        "reason",
        "decision_note",
        "return_carrier",
        "return_tracking_no",
        "created_at",
    ]
    readonly_fields = fields
    show_change_link = True


class PickupCodeHidden:
    """An order admin that shows a pickup code only masked (``****5217``) and never filters or
    looks orders up by it: a guessed code in the list's URL (``?pickup_code=...`` or
    ``__startswith``) would be a verification try outside its throttle, so Django refuses that
    lookup (400) as any disallowed one. Keep ``pickup_code`` out of ``search_fields`` too."""

    def lookup_allowed(self, lookup, value, request=None):
        if lookup.split("__")[0] == pickup.CODE_FIELD:
            return False
        return super().lookup_allowed(lookup, value, request)

    @admin.display(description="核销码")
    def pickup_code_shown(self, order: Order) -> str:
        return order.pickup_code_masked or "-"


def staff_actor(request) -> str:
    """The actor written on events by a staff action: ``"staff:<username>"``."""
    return f"staff:{request.user.username}"


def status_now(order: Order) -> str:
    """The order's current status label, read again (the action's copy may be stale)."""
    order.refresh_from_db(fields=["status"])
    return order.get_status_display()


class OrderAdmin(PickupCodeHidden, ReadOnlyModelAdmin):
    """Orders are read-only pages (no save: a full-row save would undo a payment landing
    meanwhile); state moves only through the actions, each gated by its named permission.
    Registered by ``apps.backoffice.admin_orders`` with the payments actions and column."""

    # What matters at 1,400 px: who, state, payment state, money, when paid, a refund in play.
    list_display = [
        "order_no",
        "customer",
        "kind",
        "status",
        "pay_fen",
        "pay_method",
        "paid_at",
        "after_sale_status",
        "created_at",
    ]
    list_filter = ["status", "kind", "delivery", "pay_method"]
    search_fields = ["order_no", "customer__nickname", "customer__openid", "customer__phone"]
    date_hierarchy = "created_at"
    list_select_related = ["customer"]
    inlines = [OrderLineInline, ShipmentInline, AfterSaleInline, OrderEventInline, FollowUpInline]
    actions = ["ship_with_tracking", "mark_shipped", "mark_completed"]
    # state moves only through actions; the page reads like a back office: who, where, what
    fieldsets = [
        (
            None,
            {"fields": ["order_no", "status", "kind", "customer", "ship_link", "delivery_address", "slot", "remark"]},
        ),
        (
            "金额（元）",
            {
                "fields": [
                    "goods_fen",
                    "freight_fen",
                    "coupon_fen",
                    "points_fen",
                    "member_fen",
                    "points_used",
                    "pay_fen",
                    "pay_method",
                    "coupon",
                    "flash_sale",
                ]
            },
        ),
        (
            "时间",
            {
                "fields": [
                    "created_at",
                    "pay_deadline",
                    "paid_at",
                    "shipped_at",
                    "completed_at",
                    "cancelled_at",
                    "cancel_reason",
                ]
            },
        ),
        (
            "到店自提",
            {"fields": ["delivery", "pickup_store", "pickup_code_shown", "pickup_verified_at", "pickup_verified_by"]},
        ),
    ]
    readonly_fields = [f.name for f in Order._meta.fields if f.name != pickup.CODE_FIELD] + [
        "delivery_address",
        "ship_link",
        "pickup_code_shown",
    ]

    @admin.display(description="收货地址")
    def delivery_address(self, order: Order) -> str:
        return address_text(order.address)

    @admin.display(description="发货")
    def ship_link(self, order: Order) -> str:
        if order.kind != Kind.GOODS or order.status != OrderStatus.PAID or order.delivery == "pickup":
            return "-"
        return format_html(
            '<a class="bo-button" href="{}">填写快递单号并发货</a>', reverse("admin:orders_order_ship", args=[order.pk])
        )

    def get_urls(self):
        ship = self.admin_site.admin_view(self.ship_view)
        return [path("<int:object_id>/ship/", ship, name="orders_order_ship")] + super().get_urls()

    def ship_view(self, request, object_id: int):
        """The order page's shipping form: carrier + tracking number, then THE shipping service."""
        require_perm(request, "orders.ship_order")
        order = get_object_or_404(Order, pk=object_id)
        back = reverse("admin:orders_order_change", args=[order.pk])
        if request.method == "POST":
            report(
                request,
                "发货",
                [
                    self._ship(
                        request,
                        order,
                        request.POST.get(f"carrier_{order.pk}", ""),
                        request.POST.get(f"tracking_{order.pk}", ""),
                    )
                ],
            )
            return redirect(back)
        return self._ship_form(request, [order], form_action="", back_url=back, bulk=False)

    def _ship_form(self, request, orders, *, form_action: str, back_url: str, bulk: bool):
        for order in orders:
            order.address_text = address_text(order.address)
        return render(
            request,
            "admin/starmall/ship.html",
            {
                **self.admin_site.each_context(request),
                "title": "发货",
                "orders": orders,
                "carriers": list(carriers.CARRIERS.items()),
                "form_action": form_action,
                "back_url": back_url,
                "bulk": bulk,
            },
        )

    @admin.action(description="填写快递单号并发货（已支付的实物订单）", permissions=["ship"])
    def ship_with_tracking(self, request, queryset):
        require_perm(request, "orders.ship_order")
        orders = list(queryset.order_by("pk"))
        if not request.POST.get("apply"):
            back = reverse("admin:orders_order_changelist")
            return self._ship_form(request, orders, form_action=back, back_url=back, bulk=True)
        report(
            request,
            "发货",
            [
                self._ship(
                    request,
                    order,
                    request.POST.get(f"carrier_{order.pk}", ""),
                    request.POST.get(f"tracking_{order.pk}", ""),
                )
                for order in orders
            ],
        )
        return None

    def get_queryset(self, request):
        sale = AfterSale.objects.filter(order=OuterRef("pk")).order_by("-id").values("status")[:1]
        return super().get_queryset(request).annotate(latest_sale_status=Subquery(sale))

    @admin.display(description="售后")
    def after_sale_status(self, order):
        """The latest refund request's state ("待审核", "已退款"...), "-" without one."""
        value = getattr(order, "latest_sale_status", None)
        return AfterSale.Status(value).label if value else "-"

    def has_ship_permission(self, request):
        return request.user.has_perm("orders.ship_order")

    def has_complete_permission(self, request):
        return request.user.has_perm("orders.complete_order")

    def has_cancel_permission(self, request):
        return request.user.has_perm("orders.cancel_order")

    @admin.action(description="标记发货（无快递单号：当面交付）", permissions=["ship"])
    def mark_shipped(self, request, queryset):
        require_perm(request, "orders.ship_order")
        report(request, "发货", [self._ship(request, order) for order in queryset.order_by("pk")])

    def _ship(self, request, order: Order, carrier_code: str = "", tracking_no: str = "") -> Outcome:
        try:
            if shipments.order_ship(
                order=order, actor=staff_actor(request), carrier_code=carrier_code, tracking_no=tracking_no
            ):
                return Outcome(
                    order.order_no,
                    messages.SUCCESS,
                    f"已发货（{carriers.carrier_name(carrier_code)} {tracking_no.strip()}）"
                    if carrier_code
                    else "已发货",
                )
        except ShopError as exc:
            return Outcome(order.order_no, messages.WARNING, f"未发货：{exc.message}")
        if order.kind != Kind.GOODS:
            return Outcome(order.order_no, messages.WARNING, "未发货：咨询订单不需要发货")
        if order.delivery == "pickup":
            return Outcome(order.order_no, messages.WARNING, "未发货：到店自提订单由门店核销，不发货")
        return Outcome(
            order.order_no, messages.WARNING, f"未发货：订单状态为「{status_now(order)}」，只有已支付的订单可以发货"
        )

    @admin.action(description="标记完成（已发货的实物 / 已进行的咨询）", permissions=["complete"])
    def mark_completed(self, request, queryset):
        require_perm(request, "orders.complete_order")
        outcomes = []
        for order in queryset.order_by("pk"):
            if services.order_complete(order=order, actor=staff_actor(request)):
                outcomes.append(Outcome(order.order_no, messages.SUCCESS, "已完成"))
            else:
                needed = "已发货" if order.kind == Kind.GOODS else "已支付"
                outcomes.append(
                    Outcome(
                        order.order_no, messages.WARNING, f"未完成：订单状态为「{status_now(order)}」，需要「{needed}」"
                    )
                )
        report(request, "完成", outcomes)


@admin.register(FollowUp)
class FollowUpAdmin(ReadOnlyModelAdmin):
    """The outbox: rows written by the services, delivered by the worker (look, never edit)."""

    list_display = ["key", "kind", "status", "attempts", "created_at", "dispatched_at", "done_at"]
    list_filter = ["status", "kind"]
    search_fields = ["key", "order__order_no"]


class AfterSaleAdmin(ReadOnlyModelAdmin):
    """Refund requests: approved or rejected only by the actions (``orders.decide_aftersale``),
    which call payments: registered with them by ``apps.backoffice.admin_orders``."""

    # The refund number is the order number + "R<n>": no separate order column.
    list_display = [
        "refund_no",
        "order_status",
        "amount_fen",
        "status",
        "reason",
        "return_tracking_no",
        "decider",
        "created_at",
    ]
    list_filter = ["status"]
    list_select_related = ["order"]
    search_fields = ["refund_no", "order__order_no", "order__customer__openid", "return_tracking_no"]
    readonly_fields = [f.name for f in AfterSale._meta.fields]

    @admin.display(description="处理人", ordering="decided_by")
    def decider(self, sale: AfterSale) -> str:
        return actor_text(sale.decided_by) if sale.decided_by else "-"

    @admin.display(description="订单状态")
    def order_status(self, sale: AfterSale) -> str:
        return sale.order.get_status_display()

    def has_decide_permission(self, request):
        return request.user.has_perm("orders.decide_aftersale")

    def has_receive_permission(self, request):
        return request.user.has_perm("orders.receive_return")

    def _text_form(self, request, queryset, *, action: str, title: str, label: str, required: bool):
        return render(
            request,
            "admin/starmall/text_action.html",
            {
                **self.admin_site.each_context(request),
                "title": title,
                "label": label,
                "action": action,
                "objects": list(queryset.order_by("pk")),
                "required": required,
            },
        )


@admin.register(OrderEvent)
class OrderEventAdmin(ReadOnlyModelAdmin):
    """The append-only status log of every order, across orders (audit)."""

    list_display = ["created_at", "order", "from_status", "to_status", event_actor, "note"]
    list_filter = ["to_status", "actor"]
    search_fields = ["order__order_no", "actor", "note"]
    date_hierarchy = "created_at"
    list_select_related = ["order"]
