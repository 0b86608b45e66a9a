"""Points and balance: an append-only ledger, frozen earned points, and no farming.

Points an order earns are frozen until it completes plus POINTS_FREEZE_DAYS and die with a
cancelled or refunded order; the customer's totals always equal the ledger's sums.
"""

import datetime as dt
import random

import pytest
from django.utils import timezone
from ledger_helpers import assert_ledger_matches

from apps.accounts import wallet
from apps.accounts.models import Address, Coupon, Customer, WalletEvent
from apps.accounts.selectors import points_frozen
from apps.catalog.models import Product, Sku
from apps.orders import followups, shipments
from apps.orders import services as orders
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import AfterSale, FollowUp, Order
from apps.payments import balance, order_lifecycle, refunds
from apps.payments.models import Refund

pytestmark = pytest.mark.django_db


def run_followups(order_no: str) -> None:
    """Run the order's points award (the other follow-ups message a phone, not the ledger)."""
    for row in FollowUp.objects.filter(order__order_no=order_no, status="pending", kind="points_award"):
        assert followups.followup_execute(row.pk) == "done"


def run_refunds(order_no: str) -> None:
    for refund in Refund.objects.filter(order__order_no=order_no, status="pending"):
        assert refunds.refund_execute(refund_id=refund.pk) == "success"


def test_points_farming_with_auto_refunded_balance_consultations_earns_nothing(
    make_customer, make_api, consultation, place_order
):
    """The points-farming attack: pay a consultation from the balance, ask for a refund more than
    24 h ahead (approved automatically), repeat. Before: +299 points per round. Now: the award
    is frozen and dies with the refund; the balance comes back with a ledger row each time."""
    customer = make_customer()
    wallet.balance_adjust(customer_id=customer.pk, amount_fen=100000, ref="opening")
    api = make_api(customer)
    for round_ in range(3):
        slot = consultation.slots[-1 - round_]  # days away: auto-approved
        order = place_order(api, items=[(consultation.sku, 1)], slot=slot)
        paid = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
        assert paid.status_code == 200 and paid.json()["order"]["status"] == "paid"
        run_followups(order["order_no"])
        refund = api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "时间有变"}, format="json")
        assert refund.status_code == 202 and refund.json()["status"] == "approved"
        run_refunds(order["order_no"])
        assert Order.objects.get(order_no=order["order_no"]).status == "refunded"
        run_followups(order["order_no"])  # a late award (follow-up after the refund) changes nothing

    customer.refresh_from_db()
    assert (customer.balance_fen, customer.points, points_frozen(customer_id=customer.pk)) == (100000, 0, 0)
    awards = WalletEvent.objects.filter(customer=customer, kind="points", reason="award")
    assert sorted(awards.values_list("amount", "state")) == [(299, "void")] * 3
    balance = WalletEvent.objects.filter(customer=customer, kind="balance").order_by("id")
    assert [(e.reason, e.amount) for e in balance] == [("adjust", 100000)] + [("pay", -29900), ("refund", 29900)] * 3
    assert all(e.order_no for e in balance[1:])
    assert_ledger_matches(customer.pk)
    points = api.get("/api/v1/me/points").json()
    assert (points["points"], points["frozen"], points["count"]) == (0, 0, 3)
    assert {r["available_at"] for r in points["results"]} == {None}  # void awards never become available


@pytest.fixture
def shop(make_customer, make_api, make_sku):
    customer = make_customer()
    wallet.balance_adjust(customer_id=customer.pk, amount_fen=10**6, ref="opening")
    wallet.points_adjust(customer_id=customer.pk, points=500, ref="opening")
    Address.objects.create(
        customer=customer,
        name="张三",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        detail="文三路100号",
        is_default=True,
    )
    sku = make_sku(price_fen=6000, stock=1000)
    return customer, make_api(customer), sku


def test_earned_points_frozen_until_completion_plus_freeze_days_then_released_once(shop, settings):
    customer, api, sku = shop
    settings.POINTS_FREEZE_DAYS = 7
    draft = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 2}])
    order, _ = order_create(customer=customer, order_key=draft["order_key"])
    balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
    run_followups(order.order_no)
    award = WalletEvent.objects.get(kind="points", reason="award", order_no=order.order_no)
    assert (award.amount, award.state, award.available_at) == (120, "frozen", None)
    assert (Customer.objects.get(pk=customer.pk).points, points_frozen(customer_id=customer.pk)) == (500, 120)
    assert wallet.points_release_due(now=timezone.now() + dt.timedelta(days=365)) == 0  # not completed yet

    assert shipments.order_ship(order=order, actor="staff:t") and orders.order_complete(order=order, actor="customer")
    completed_at = Order.objects.get(pk=order.pk).completed_at
    award.refresh_from_db()
    assert award.available_at == completed_at + dt.timedelta(days=7)
    body = api.get("/api/v1/me/points").json()
    assert (body["points"], body["frozen"]) == (500, 120)
    assert body["results"][0]["change"] == 120 and body["results"][0]["reason"] == "award"
    assert body["results"][0]["order_no"] == order.order_no
    assert dt.datetime.fromisoformat(body["results"][0]["available_at"]) == award.available_at

    assert wallet.points_release_due(now=award.available_at - dt.timedelta(seconds=1)) == 0
    assert wallet.points_release_due(now=award.available_at) == 120
    assert wallet.points_release_due(now=award.available_at) == 0  # safe twice
    assert (Customer.objects.get(pk=customer.pk).points, points_frozen(customer_id=customer.pk)) == (620, 0)
    assert_ledger_matches(customer.pk)


def test_points_of_an_order_refunded_after_release_are_taken_back(shop):
    customer, api, sku = shop
    draft = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 2}])
    order, _ = order_create(customer=customer, order_key=draft["order_key"])
    balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
    run_followups(order.order_no)
    shipments.order_ship(order=order, actor="staff:t")
    orders.order_complete(order=order, actor="customer")
    assert wallet.points_release_due(now=timezone.now() + dt.timedelta(days=8)) == 120
    sale = refunds.refund_request(order_no=order.order_no, customer_id=customer.pk, reason="质量问题")
    refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:t")
    run_refunds(order.order_no)
    customer.refresh_from_db()
    assert (customer.points, customer.balance_fen) == (500, 10**6)
    assert list(
        WalletEvent.objects.filter(kind="points", order_no=order.order_no)
        .order_by("id")
        .values_list("reason", "amount", "state")
    ) == [("award", 120, "available"), ("revoke", -120, "available")]
    assert_ledger_matches(customer.pk)


def test_full_refund_returns_a_valid_coupon_and_takes_sales_back(shop):
    customer, api, sku = shop
    valid = Coupon.objects.create(
        customer=customer, title="减10", discount_fen=1000, valid_until=timezone.now() + dt.timedelta(days=30)
    )
    soon = Coupon.objects.create(
        customer=customer, title="减5", discount_fen=500, valid_until=timezone.now() + dt.timedelta(hours=1)
    )
    placed = []
    for coupon in (valid, soon):
        draft = order_confirm(customer=customer, coupon_id=coupon.pk, items=[{"sku_id": sku.pk, "quantity": 1}])
        order, _ = order_create(customer=customer, order_key=draft["order_key"])
        balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        placed.append(order)
    assert Product.objects.get(pk=sku.product_id).sales == 2
    Coupon.objects.filter(pk=soon.pk).update(valid_until=timezone.now() - dt.timedelta(seconds=1))  # it expired
    for order in placed:
        sale = refunds.refund_request(order_no=order.order_no, customer_id=customer.pk, reason="不想要了")
        refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:t")
        run_refunds(order.order_no)
        assert Order.objects.get(pk=order.pk).status == "refunded"
    assert Coupon.objects.get(pk=valid.pk).status == "available"
    assert (Coupon.objects.get(pk=soon.pk).status, Coupon.objects.get(pk=soon.pk).used_order_no) == (
        "used",
        placed[1].order_no,
    )
    assert Product.objects.get(pk=sku.product_id).sales == 0
    assert Sku.objects.get(pk=sku.pk).stock == 1000
    customer.refresh_from_db()
    assert customer.balance_fen == 10**6
    assert_ledger_matches(customer.pk)


def test_sales_never_drop_below_zero(make_sku):
    from apps.catalog.stock import product_sales_remove

    sku = make_sku()
    Product.objects.filter(pk=sku.product_id).update(sales=1)
    product_sales_remove(quantities={sku.product_id: 3})
    assert Product.objects.get(pk=sku.product_id).sales == 0


def test_balance_ledger_api(shop):
    customer, api, sku = shop
    draft = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}])
    order, _ = order_create(customer=customer, order_key=draft["order_key"])
    balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
    body = api.get("/api/v1/me/balance").json()
    assert body["balance_fen"] == 10**6 - 7000
    assert body["count"] == 2 and body["next"] is None and body["previous"] is None
    first = body["results"][0]
    assert (first["change_fen"], first["reason"], first["reason_text"], first["order_no"]) == (
        -7000,
        "pay",
        "支付订单",
        order.order_no,
    )
    assert first["created_at"].endswith("+08:00")
    assert body["results"][1]["change_fen"] == 10**6 and body["results"][1]["order_no"] == ""
    assert api.get("/api/v1/me/balance", {"page_size": 1}).json()["next"] is not None
    assert api.get("/api/v1/me/points").json()["results"][0]["reason_text"] == "后台调整"


def test_ledger_endpoints_need_a_login(make_api):
    for path in ("/api/v1/me/points", "/api/v1/me/balance"):
        assert make_api().get(path).status_code == 401


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_operations_keep_the_totals_equal_to_the_ledger(shop, settings, seed):
    """Earn, spend, cancel, refund (to the balance), complete and release, staff adjustments in
    a random order: after every step the customer's totals equal the ledger's sums."""
    customer, api, sku = shop
    settings.MAX_UNPAID_ORDERS = 50
    rnd = random.Random(seed)
    later = [timezone.now()]

    def create():
        fresh = Customer.objects.get(pk=customer.pk)
        use = rnd.choice([0, 0, min(fresh.points, rnd.randint(1, 300))])
        draft = order_confirm(customer=fresh, use_points=use, items=[{"sku_id": sku.pk, "quantity": rnd.randint(1, 3)}])
        order_create(customer=fresh, order_key=draft["order_key"])

    def pick(status):
        rows = list(Order.objects.filter(customer=customer, status=status))
        return rnd.choice(rows) if rows else None

    def pay():
        if order := pick("unpaid"):
            balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
            run_followups(order.order_no)

    def cancel():
        if order := pick("unpaid"):
            order_lifecycle.order_cancel(order=order, actor="customer", reason="random")

    def refund():
        if order := pick(rnd.choice(["paid", "shipped", "completed"])):
            sale = refunds.refund_request(order_no=order.order_no, customer_id=customer.pk, reason="random")
            if sale.status == AfterSale.Status.REQUESTED:
                refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:t")
            run_refunds(order.order_no)

    def complete():
        if order := pick("paid"):
            shipments.order_ship(order=order, actor="staff:t")
            orders.order_complete(order=order, actor="customer")

    def release():
        later[0] += dt.timedelta(days=rnd.randint(1, 5))
        wallet.points_release_due(now=later[0])

    def adjust():
        wallet.balance_adjust(customer_id=customer.pk, amount_fen=rnd.randint(1, 5000), ref=f"a{rnd.random()}")
        wallet.points_adjust(customer_id=customer.pk, points=rnd.randint(1, 50), ref=f"p{rnd.random()}")

    steps = [create, create, pay, pay, cancel, refund, complete, release, adjust]
    for _ in range(60):
        rnd.choice(steps)()
        assert_ledger_matches(customer.pk)
    assert WalletEvent.objects.filter(customer=customer).count() > 10
    # every refunded or cancelled order's award is void, never available or frozen
    dead = Order.objects.filter(customer=customer, status__in=["refunded", "refunding", "cancelled"])
    assert not WalletEvent.objects.filter(reason="award", order_no__in=dead.values("order_no"), state="frozen").exists()
