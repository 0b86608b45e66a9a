"""Each role's daily tasks in a real headless Chromium at 1,400 px, checked in the database."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.utils import timezone

from apps.accounts.models import Address, Customer
from apps.appointments.models import Booking, Slot
from apps.backoffice.roles import sync_roles
from apps.catalog.management.commands.seed_demo import demo_wallet_credit
from apps.catalog.models import Sku
from apps.orders.models import AfterSale, Order, OrderStatus
from apps.payments.models import Refund

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "pw-browser-1"


def _staff(role: str):
    # The roles come from a data migration; a transactional test before this one (PostgreSQL
    # mode) flushed them, so make sure they exist the way `make run` does.
    sync_roles(Group, Permission)
    user = get_user_model().objects.create_user(role, password=PASSWORD, is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return user


def _demo_paid_orders(make_api, place_order, n: int):
    """Demo data; ``n`` goods orders of the demo customer paid from the balance -> (api, order numbers)."""
    call_command("loaddata", "fixtures/demo.json", verbosity=0)
    demo_wallet_credit()  # demo.json's wallet is zero: seed_demo credits it through the ledger
    customer = Customer.objects.get(pk=1)
    api = make_api(customer)
    sku = Sku.objects.filter(product__kind="goods", stock__gte=5).order_by("pk").first()
    address = Address.objects.filter(customer=customer).first()
    orders = []
    for _ in range(n):
        order = place_order(api, items=[(sku, 1)], address=address)
        paid = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
        assert paid.status_code == 200, paid.json()
        orders.append(order["order_no"])
    return api, orders


@pytest.fixture
def shop(make_api, place_order):
    """Demo data; two goods orders paid from the balance, one with a refund request waiting."""
    api, orders = _demo_paid_orders(make_api, place_order, 2)
    call_command("generate_slots", verbosity=0)
    asked = api.post(f"/api/v1/orders/{orders[1]}/refund", {"reason": "不想要了"}, format="json")
    assert asked.status_code == 202 and asked.json()["status"] == "requested", asked.json()
    return {"to_ship": orders[0], "to_refund": orders[1]}


def _run_action(page, action: str):
    page.select_option("select[name=action]", action)
    page.click("button[name=index]")
    page.wait_for_load_state("networkidle")


def test_roles_do_their_daily_tasks_in_the_browser(page_for, shot, base_url, shop):
    for role in ("运营", "财务", "老师"):
        _staff(role)

    # Operations: the dashboard, then ship the paid order from the order list.
    ops = page_for("运营", PASSWORD)
    assert ops.locator("#dashboard").is_visible()
    assert ops.locator("#bo-revenue-chart canvas").count() == 1  # ECharts drew it
    assert ops.locator("text=待发货订单").is_visible()
    shot(ops, "01-dashboard-operations")
    assert all(url.startswith(base_url) for url in ops.requested), [
        u for u in ops.requested if not u.startswith(base_url)
    ]  # no CDN
    ops.goto(f"{base_url}/admin/orders/order/?status__exact=paid")
    row = ops.locator(f"tr:has-text('{shop['to_ship']}')")
    row.locator("input.action-select").check()
    shot(ops, "02-orders-list-operations")
    _run_action(ops, "mark_shipped")
    shot(ops, "03-orders-shipped")
    assert Order.objects.get(order_no=shop["to_ship"]).status == OrderStatus.SHIPPED
    assert "已发货" in ops.content()

    # Finance: approve the refund request, then export the orders as CSV.
    finance = page_for("财务", PASSWORD)
    shot(finance, "04-dashboard-finance")
    finance.goto(f"{base_url}/admin/orders/aftersale/?status__exact=requested")
    finance.locator(f"tr:has-text('{shop['to_refund']}') input.action-select").check()
    _run_action(finance, "approve")
    shot(finance, "05-refund-approved")
    sale = AfterSale.objects.get(order__order_no=shop["to_refund"])
    assert sale.status in (AfterSale.Status.APPROVED, AfterSale.Status.REFUNDED)
    assert Refund.objects.filter(after_sale=sale, refund_fen=sale.amount_fen).count() == 1
    finance.goto(f"{base_url}/admin/backoffice/export/")
    shot(finance, "06-export-form")
    with finance.expect_download() as download:
        finance.click("#export-form button[type=submit]")
    table = list(csv.reader(io.StringIO(open(download.value.path(), encoding="utf-8-sig").read())))
    assert table[0][0] == "订单号"
    assert {row[0] for row in table[1:]} >= {shop["to_ship"], shop["to_refund"]}

    # Teacher: close a slot to new bookings on the slot page.
    slot = Slot.objects.filter(is_open=True).exclude(bookings__live=True).order_by("start").first()
    teacher = page_for("老师", PASSWORD)
    shot(teacher, "07-index-teacher")
    teacher.goto(f"{base_url}/admin/backoffice/week/?start={timezone.localdate():%Y-%m-%d}")
    assert teacher.locator("#week a.bo-slot").count() > 0
    shot(teacher, "07b-week-teacher")
    teacher.goto(f"{base_url}/admin/appointments/slot/{slot.pk}/change/")
    teacher.uncheck("input[name=is_open]")
    shot(teacher, "08-slot-teacher")
    teacher.click("button[name=_save], input[name=_save]")
    teacher.wait_for_load_state("networkidle")
    slot.refresh_from_db()
    assert slot.is_open is False
    week = slot.start.astimezone(timezone.get_current_timezone()).date()
    teacher.goto(f"{base_url}/admin/backoffice/week/?start={week:%Y-%m-%d}")
    assert (
        teacher.locator(f"a[href='/admin/appointments/slot/{slot.pk}/change/']").get_attribute("data-state")
        == "blocked"
    )
    shot(teacher, "09-week-slot-blocked")
    assert (slot.capacity, Booking.objects.filter(slot=slot, live=True).count()) == (1, 0)


def test_finance_batch_refunds_selected_orders_in_the_browser(page_for, shot, base_url, make_api, place_order):
    """The finance role selects paid orders in the order list, runs 批量退款, gives the reason,
    lands on the batch page; the database holds the batch, and the refunds once the tasks ran."""
    from apps.payments import refund_batches, refunds
    from apps.payments.models import RefundBatch

    _, nos = _demo_paid_orders(make_api, place_order, 2)
    balance = Customer.objects.get(pk=1).balance_fen
    _staff("财务")

    finance = page_for("财务", PASSWORD)
    finance.goto(f"{base_url}/admin/orders/order/?status__exact=paid")
    for no in nos:
        finance.locator(f"tr:has-text('{no}') input.action-select").check()
    _run_action(finance, "batch_refund")
    assert finance.locator("text=确认批量退款").count() == 1
    finance.fill("#id_text", "商品停产，全额退款")
    shot(finance, "10-batch-refund-confirm")
    finance.click("#refund-batch-form input[type=submit]")
    finance.wait_for_load_state("networkidle")
    batch = RefundBatch.objects.get()
    assert finance.url.endswith(f"/admin/payments/refundbatch/{batch.pk}/change/")
    assert (batch.reason, batch.created_by.username) == ("商品停产，全额退款", "财务")
    assert sorted(batch.items.values_list("order_no", "status")) == sorted((no, "queued") for no in nos)

    for item in batch.items.all():  # what the worker does with each item's task
        refund_batch_status = refund_batches.refund_batch_item_run(item_id=item.pk)
        assert refund_batch_status == "refunding"
        refunds.refund_execute(refund_id=batch.items.get(pk=item.pk).refund_id)
    finance.reload()
    assert finance.locator("text=已退款").count() >= 2
    shot(finance, "11-batch-refund-page")
    finance.goto(f"{base_url}/admin/payments/refundbatch/")
    row = finance.locator(f"tr:has-text('批次 #{batch.pk}')")
    assert row.locator("td.field-refunded").inner_text().strip() == "2"  # counts per status
    assert row.locator("td.field-queued").inner_text().strip() == "0"
    shot(finance, "12-batch-refund-list")
    assert sorted(Refund.objects.values_list("out_refund_no", "status")) == sorted((f"{no}R1", "success") for no in nos)
    assert set(Order.objects.filter(order_no__in=nos).values_list("status", flat=True)) == {"refunded"}
    assert Customer.objects.get(pk=1).balance_fen == balance + sum(
        Order.objects.filter(order_no__in=nos).values_list("pay_fen", flat=True)
    )
