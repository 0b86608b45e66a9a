"""Every state change in the back office is gated by its named permission.

A view-only staff user (every view_* permission, nothing else) is offered no action, and every
action POSTed by hand, every change form and every direct call of an action is refused with
nothing changed in the database. A staff user with exactly the named permission succeeds,
through the same service as the API (status changed, event row written)."""

import datetime as dt

import pytest
from admin_helpers import action, form_data, request_refund, texts
from django.apps import apps as django_apps
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.alerts.models import Alert
from apps.alerts.services import alert_raise
from apps.appointments.models import Slot
from apps.catalog.models import Sku
from apps.orders import shipments
from apps.orders.models import AfterSale, Order, OrderEvent
from apps.payments import refunds
from apps.payments.models import Payment, PaymentStatus, ReconciliationRun, Refund

pytestmark = pytest.mark.django_db

ACTIONS = [  # (model label, action name): every state-changing admin action
    ("orders.order", "mark_shipped"),
    ("orders.order", "mark_completed"),
    ("orders.order", "cancel_unpaid"),
    ("orders.aftersale", "approve"),
    ("orders.aftersale", "reject"),
    ("orders.order", "ship_with_tracking"),
    ("orders.aftersale", "approve_return"),
    ("orders.aftersale", "confirm_return_received"),
    ("orders.aftersale", "reject_with_reason"),
    ("payments.payment", "check_with_wechat"),
    ("payments.refund", "retry"),
    ("payments.reconciliationrun", "reconcile_again"),
    ("alerts.alert", "mark_handled"),
]


@pytest.fixture
def shop(buyer, paid_orders, goods_sku, place_order, consultation):
    """Something for every action: paid orders (one with a refund request), an unpaid order with
    a MANUAL WeChat payment, a failed refund, a booked slot, a coupon, a reconciliation run."""
    customer, api, address = buyer
    shipped_later, with_request, refunded = paid_orders(3)
    request_refund(api, with_request.order_no)
    request_refund(api, refunded.order_no)
    refund = refunds.after_sale_approve(after_sale_id=AfterSale.objects.get(order=refunded).pk, actor="staff:setup")
    Refund.objects.filter(pk=refund.pk).update(status=Refund.Status.FAILED, last_error="SYSTEMERROR")
    unpaid = place_order(api, items=[(goods_sku, 1)], address=address)
    assert api.post(f"/api/v1/orders/{unpaid['order_no']}/pay", {"method": "wechat"}, format="json").status_code == 200
    Payment.objects.filter(out_trade_no=unpaid["order_no"]).update(status=PaymentStatus.MANUAL)
    consult = place_order(api, items=[(consultation.sku, 1)], slot=consultation.slots[-1])
    api.post(f"/api/v1/orders/{consult['order_no']}/pay", {"method": "balance"}, format="json")
    Coupon.objects.create(
        customer=customer,
        title="满100减10",
        discount_fen=1000,
        min_spend_fen=10000,
        valid_until=timezone.now() + dt.timedelta(days=30),
    )
    ReconciliationRun.objects.create(bill_date=dt.date(2026, 11, 30), status="ok")
    alert_raise(
        key=f"refund:{refund.out_refund_no}:failed",
        kind=Alert.Kind.REFUND_FAILED,
        title=f"退款 {refund.out_refund_no} 失败",
        text="SYSTEMERROR",
    )
    return {
        "customer": customer,
        "unpaid": Order.objects.get(order_no=unpaid["order_no"]),
        "paid": shipped_later,
        "requested": with_request,
        "refund": refund,
        "booked_slot": consultation.slots[-1],
        "free_slot": consultation.slots[0],
        "sku": goods_sku,
    }


def snapshot() -> dict:
    """Every row an admin action or form could change, as plain values."""
    return {
        "orders": list(
            Order.objects.order_by("pk").values_list(
                "pk", "status", "pay_fen", "paid_at", "shipped_at", "cancelled_at", "completed_at"
            )
        ),
        "events": OrderEvent.objects.count(),
        "after_sales": list(AfterSale.objects.order_by("pk").values_list("pk", "status", "decided_by")),
        "refunds": list(Refund.objects.order_by("pk").values_list("pk", "status", "attempts", "last_error")),
        "payments": list(Payment.objects.order_by("pk").values_list("pk", "status", "checks", "refunded_fen")),
        "stock": list(Sku.objects.order_by("pk").values_list("pk", "stock", "price_fen")),
        "slots": list(Slot.objects.order_by("pk").values_list("pk", "capacity", "booked", "is_open", "start", "end")),
        "wallet": list(Customer.objects.order_by("pk").values_list("pk", "balance_fen", "points", "nickname")),
        "wallet_events": WalletEvent.objects.count(),
        "coupons": list(Coupon.objects.order_by("pk").values_list("pk", "status", "used_order_no", "discount_fen")),
        "runs": list(ReconciliationRun.objects.values_list("pk", "status", "checked_at")),
        "alerts": list(Alert.objects.values_list("pk", "resolved_at", "resolved_by")),
    }


def _all_pks(model_label: str) -> list[int]:
    app_label, model = model_label.split(".")
    return list(django_apps.get_model(app_label, model).objects.values_list("pk", flat=True))


def test_view_only_staff_is_offered_no_action_and_every_hand_made_action_is_refused(viewer, shop):
    before = snapshot()
    for model_label in {label for label, _ in ACTIONS} | {"appointments.slot", "catalog.sku", "accounts.customer"}:
        app_label, model = model_label.split(".")
        page = viewer.get(reverse(f"admin:{app_label}_{model}_changelist"))
        assert page.status_code == 200, model_label
        assert b'name="action"' not in page.content, model_label  # no action select at all
    for model_label, name in ACTIONS:
        response = action(viewer, model_label, name, _all_pks(model_label))
        assert response.status_code == 200, (model_label, name)
        assert not any(level == "success" for level, _ in texts(response)), (model_label, name)
    assert snapshot() == before


def test_view_only_staff_cannot_call_an_action_directly(viewer, shop):
    """Checked again inside the action: even a call that skipped Django's action filter is refused."""
    before = snapshot()
    for model_label, name in ACTIONS:
        model = django_apps.get_model(*model_label.split("."))
        model_admin = admin.site._registry[model]
        request = RequestFactory().post("/")
        request.user = viewer.user
        with pytest.raises(PermissionDenied):
            getattr(model_admin, name)(request, model.objects.all())
    assert snapshot() == before


def test_view_only_staff_cannot_post_any_change_form(viewer, shop):
    before = snapshot()
    customer, slot, sku = shop["customer"], shop["free_slot"], shop["sku"]
    coupon = Coupon.objects.get()
    posts = [
        (reverse("admin:orders_order_change", args=[shop["paid"].pk]), {"status": "cancelled", "_save": "Save"}),
        (
            reverse("admin:orders_aftersale_change", args=[AfterSale.objects.first().pk]),
            {"status": "approved", "_save": "Save"},
        ),
        (
            reverse("admin:accounts_customer_change", args=[customer.pk]),
            {"nickname": "x", "balance_fen": "99999999", "points": "99999", "_save": "Save"},
        ),
        (
            reverse("admin:accounts_coupon_change", args=[coupon.pk]),
            {
                "customer": customer.pk,
                "title": "t",
                "discount_fen": "99999",
                "min_spend_fen": "0",
                "valid_until_0": "2030-01-01",
                "valid_until_1": "00:00:00",
                "status": "used",
                "_save": "Save",
            },
        ),
        (
            reverse("admin:catalog_sku_change", args=[sku.pk]),
            {
                "product": sku.product_id,
                "specs": "{}",
                "price_fen": "1",
                "is_active": "on",
                "stock_change": "100",
                "_save": "Save",
            },
        ),
        (
            reverse("admin:appointments_slot_change", args=[slot.pk]),
            {
                "teacher": slot.teacher_id,
                "start_0": "2030-01-01",
                "start_1": "09:00:00",
                "end_0": "2030-01-01",
                "end_1": "10:00:00",
                "capacity": "9",
                "is_open": "",
                "_save": "Save",
            },
        ),
        (
            reverse("admin:appointments_slot_add"),
            {
                "teacher": slot.teacher_id,
                "start_0": "2030-01-01",
                "start_1": "09:00:00",
                "end_0": "2030-01-01",
                "end_1": "10:00:00",
                "capacity": "9",
                "is_open": "on",
                "_save": "Save",
            },
        ),
        (reverse("admin:appointments_slot_delete", args=[slot.pk]), {"post": "yes"}),
    ]
    for url, data in posts:
        assert viewer.post(url, data).status_code == 403, url
    # The slot list's editable "is open" column is not editable for a viewer either.
    listing = reverse("admin:appointments_slot_changelist")
    assert b'name="form-0-is_open"' not in viewer.get(listing).content
    viewer.post(
        listing,
        {
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "1",
            "form-0-id": slot.pk,
            "form-0-is_open": "",
            "_save": "Save",
        },
    )
    assert snapshot() == before


def test_order_and_refund_pages_have_no_save_button_even_for_a_superuser(boss, shop):
    for url in (
        reverse("admin:orders_order_change", args=[shop["paid"].pk]),
        reverse("admin:orders_aftersale_change", args=[AfterSale.objects.first().pk]),
        reverse("admin:payments_payment_change", args=[Payment.objects.first().pk]),
    ):
        page = boss.get(url)
        assert page.status_code == 200
        assert b'name="_save"' not in page.content, url


def test_a_permission_opens_only_its_own_action(make_staff, shop):
    shipper = make_staff("orders.ship_order", view_all=True)
    page = shipper.get(reverse("admin:orders_order_changelist")).content.decode()
    assert 'value="mark_shipped"' in page
    assert 'value="cancel_unpaid"' not in page and 'value="mark_completed"' not in page
    before = snapshot()
    action(shipper, "orders.order", "cancel_unpaid", [shop["unpaid"].pk])
    action(shipper, "orders.aftersale", "approve", _all_pks("orders.aftersale"))
    assert snapshot() == before


# --- (b) exactly the named permission succeeds, through the service --------------------------


def test_ship_permission_ships_through_the_service(make_staff, shop):
    client = make_staff("orders.ship_order", "orders.view_order")
    response = action(client, "orders.order", "mark_shipped", [shop["paid"].pk])
    assert texts(response) == [("success", f"{shop['paid'].order_no}: 已发货"), ("success", "发货：成功 1 / 共 1")]
    order = Order.objects.get(pk=shop["paid"].pk)
    assert order.status == "shipped" and order.shipped_at is not None
    event = OrderEvent.objects.filter(order=order).last()
    assert (event.from_status, event.to_status, event.actor) == ("paid", "shipped", f"staff:{client.user.username}")


def test_complete_permission_completes_a_shipped_order(make_staff, shop):
    assert shipments.order_ship(order=shop["paid"], actor="staff:warehouse")
    client = make_staff("orders.complete_order", "orders.view_order")
    response = action(client, "orders.order", "mark_completed", [shop["paid"].pk, shop["unpaid"].pk])
    assert Order.objects.get(pk=shop["paid"].pk).status == "completed"
    assert Order.objects.get(pk=shop["unpaid"].pk).status == "unpaid"
    assert ("warning", f"{shop['unpaid'].order_no}: 未完成：订单状态为「待支付」，需要「已发货」") in texts(response)
    assert (
        OrderEvent.objects.filter(
            order=shop["paid"], to_status="completed", actor=f"staff:{client.user.username}"
        ).count()
        == 1
    )


def test_cancel_permission_cancels_after_asking_wechat(make_staff, shop, goods_sku):
    stock = Sku.objects.get(pk=goods_sku.pk).stock
    client = make_staff("orders.cancel_order", "orders.view_order")
    response = action(client, "orders.order", "cancel_unpaid", [shop["unpaid"].pk, shop["paid"].pk])
    assert Order.objects.get(pk=shop["unpaid"].pk).status == "cancelled"
    assert Sku.objects.get(pk=goods_sku.pk).stock == stock + 1  # its unit came back, once
    assert Payment.objects.get(out_trade_no=shop["unpaid"].order_no).status == "closed"  # WeChat closed first
    assert Order.objects.get(pk=shop["paid"].pk).status == "paid"
    assert texts(response) == [  # per order, oldest first, then the summary
        ("warning", f"{shop['paid'].order_no}: 未取消：订单状态为「已支付」，只有待支付的订单可以取消"),
        ("success", f"{shop['unpaid'].order_no}: 已取消"),
        ("warning", "取消：成功 1 / 共 2"),
    ]
    assert (
        OrderEvent.objects.filter(
            order=shop["unpaid"], to_status="cancelled", actor=f"staff:{client.user.username}"
        ).count()
        == 1
    )


def test_decide_permission_approves_and_rejects_through_the_refund_service(make_staff, shop, buyer, paid_orders):
    customer, api, _ = buyer
    (other,) = paid_orders(1)
    request_refund(api, other.order_no)
    client = make_staff("orders.decide_aftersale", "orders.view_aftersale")
    approved = AfterSale.objects.get(order=shop["requested"])
    rejected = AfterSale.objects.get(order=other)
    response = action(client, "orders.aftersale", "approve", [approved.pk])
    fen = shop["requested"].pay_fen  # 60.00 yuan + freight
    assert fen == 7000
    assert texts(response)[0] == ("success", f"{approved.refund_no}: 已同意，退款 70.00 元已提交")
    action(client, "orders.aftersale", "reject", [rejected.pk])
    assert AfterSale.objects.get(pk=approved.pk).status == "approved"
    assert Refund.objects.filter(after_sale=approved, refund_fen=fen, status="pending").count() == 1
    assert Order.objects.get(pk=shop["requested"].pk).status == "refunding"
    assert (AfterSale.objects.get(pk=rejected.pk).status, Order.objects.get(pk=other.pk).status) == ("rejected", "paid")
    assert AfterSale.objects.get(pk=rejected.pk).decided_by == f"staff:{client.user.username}"
    again = action(client, "orders.aftersale", "approve", [approved.pk])  # a second click: nothing new
    assert texts(again)[0] == ("warning", f"{approved.refund_no}: 未同意：申请状态为「已同意」，只能处理待审核的申请")
    assert Refund.objects.filter(after_sale=approved).count() == 1


def test_resolve_and_retry_permissions(make_staff, shop):
    payment = Payment.objects.get(out_trade_no=shop["unpaid"].order_no)
    client = make_staff("payments.resolve_payment", "payments.view_payment")
    response = action(client, "payments.payment", "check_with_wechat", [payment.pk])
    assert Payment.objects.get(pk=payment.pk).status == "pending"  # the sandbox says NOTPAY: no longer manual
    assert texts(response)[0][0] == "success"
    client = make_staff("payments.retry_refund", "payments.view_refund")
    action(client, "payments.refund", "retry", [shop["refund"].pk])
    assert Refund.objects.get(pk=shop["refund"].pk).status == "pending"


def test_change_stock_permission_changes_stock_relatively_and_nothing_else(make_staff, shop, goods_sku):
    client = make_staff("catalog.change_stock", "catalog.view_sku")
    url = reverse("admin:catalog_sku_change", args=[goods_sku.pk])
    assert b'name="stock_change"' in client.get(url).content
    Sku.objects.filter(pk=goods_sku.pk).update(stock=4)  # orders took units while the page was open
    response = client.post(
        url,
        {
            "product": goods_sku.product_id,
            "specs": "{}",
            "price_fen": "1",
            "is_active": "",
            "stock_change": "5",
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    sku = Sku.objects.get(pk=goods_sku.pk)
    assert (sku.stock, sku.price_fen, sku.is_active) == (9, 6000, True)  # only the stock, relatively
    # The generic "change SKU" permission does not reach the stock.
    editor = make_staff("catalog.change_sku", "catalog.view_sku")
    assert b'name="stock_change"' not in editor.get(url).content
    editor.post(
        url,
        {
            "product": goods_sku.product_id,
            "specs": '{"颜色": "天青"}',
            "price_fen": "70.00",  # yuan (stored 7000 fen)
            "code": "",
            "is_active": "on",
            "stock_change": "100",
            "_save": "Save",
        },
    )
    sku = Sku.objects.get(pk=goods_sku.pk)
    assert (sku.stock, sku.price_fen) == (9, 7000)


def test_manage_slot_permission_changes_an_unbooked_slot(make_staff, shop):
    slot = shop["free_slot"]
    client = make_staff("appointments.manage_slot")
    url = reverse("admin:appointments_slot_change", args=[slot.pk])
    data = form_data(client.get(url))
    data["capacity"] = "3"
    assert client.post(url, data).status_code == 302
    assert Slot.objects.get(pk=slot.pk).capacity == 3
    generic = make_staff("appointments.change_slot", "appointments.view_slot")
    data["capacity"] = "5"
    assert generic.post(url, data).status_code == 403  # the generic permission is not enough
    assert Slot.objects.get(pk=slot.pk).capacity == 3


def test_view_only_staff_can_open_every_page_without_a_save_button(viewer, shop):
    opened = 0
    for model in admin.site._registry:
        meta = model._meta
        listing = viewer.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        assert listing.status_code == 200, meta.label
        first = model._default_manager.first()
        if first is not None:
            detail = viewer.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk]))
            assert detail.status_code == 200, meta.label
            assert b'name="_save"' not in detail.content, meta.label
            opened += 1
    assert opened >= 15
