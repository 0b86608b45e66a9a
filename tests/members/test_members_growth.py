"""Member levels and the growth ledger: credited once when an order completes, its refunded
share taken back (per refund, once), the total always the ledger's sum; ``GET /me/member`` and
``GET /me/growth`` as API.md states them."""

import datetime as dt

import pytest
from django.db.models import Sum
from django.utils import timezone

from apps.members import selectors, services
from apps.members.models import GrowthEvent, Level, Membership
from apps.orders import followups, shipments
from apps.orders.models import FollowUp, Order
from apps.payments import refunds

pytestmark = pytest.mark.django_db


@pytest.fixture
def levels(db):
    return [
        Level.objects.create(name="普通会员", growth_min=0, discount_percent=100),
        Level.objects.create(name="银卡", growth_min=1000, discount_percent=98),
        Level.objects.create(name="金卡", growth_min=5000, discount_percent=95),
    ]


def _growth(customer) -> int:
    return Membership.objects.get(customer=customer).growth


def _ledger_sum(customer) -> int:
    return GrowthEvent.objects.filter(customer=customer).aggregate(n=Sum("change"))["n"] or 0


def _run(kind: str, order_no: str) -> list[str]:
    ids = FollowUp.objects.filter(kind=kind, order__order_no=order_no).values_list("pk", flat=True)
    return [followups.followup_execute(pk) for pk in ids]


def test_me_member_without_growth_is_the_lowest_level_and_names_the_next(api, levels):
    body = api.get("/api/v1/me/member").json()
    assert body == {
        "level": {"id": levels[0].pk, "name": "普通会员", "discount_percent": 100},
        "growth": 0,
        "next_level": {"name": "银卡", "growth_min": 1000},
        "svip": None,
    }


def test_level_is_the_highest_reached_and_svip_shows_its_expiry(api, customer, levels):
    services.growth_order_completed(customer_id=customer.pk, order_no="100", basis_fen=500_000)  # 5,000 yuan
    expires = timezone.now() + dt.timedelta(days=3)
    Membership.objects.filter(customer=customer).update(svip_expires_at=expires)
    body = api.get("/api/v1/me/member").json()
    assert body["level"]["name"] == "金卡" and body["growth"] == 5000 and body["next_level"] is None
    assert dt.datetime.fromisoformat(body["svip"]["expires_at"]) == expires
    assert body["svip"]["expires_at"].endswith("+08:00")
    Membership.objects.filter(customer=customer).update(svip_expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert api.get("/api/v1/me/member").json()["svip"] is None


def test_completed_order_credits_growth_once_and_the_ledger_lists_it(buyer, paid, levels):
    order, _ = paid(price_fen=5050, quantity=2)  # 101.00 yuan of goods, free freight from 99 yuan
    row = Order.objects.get(order_no=order["order_no"])
    assert shipments.order_ship(order=row, actor="staff:test") is True
    assert buyer.api.post(f"/api/v1/orders/{row.order_no}/receive").status_code == 200
    assert _run(FollowUp.Kind.GROWTH_AWARD, row.order_no) == ["done"]
    assert (
        services.growth_order_completed(  # a replay changes nothing
            customer_id=row.customer_id, order_no=row.order_no, basis_fen=row.pay_fen - row.freight_fen
        )
        is False
    )
    expected = (row.pay_fen - row.freight_fen) // 100
    assert expected == 101
    assert _growth(buyer.customer) == _ledger_sum(buyer.customer) == expected
    page = buyer.api.get("/api/v1/me/growth").json()
    assert page["count"] == 1 and page["next"] is None
    entry = page["results"][0]
    assert (entry["change"], entry["reason"], entry["order_no"]) == (101, "order_completed", row.order_no)
    assert entry["created_at"].endswith("+08:00")


def test_partial_refunds_take_back_their_share_once_each(customer, levels):
    cid = customer.pk
    assert services.growth_order_completed(customer_id=cid, order_no="200", basis_fen=12_345) is True  # 123
    assert services.growth_order_refunded(customer_id=cid, order_no="200", refund_no="200R1", refund_fen=5000)
    assert _growth(customer) == 73  # (12345 - 5000) // 100
    assert not services.growth_order_refunded(customer_id=cid, order_no="200", refund_no="200R1", refund_fen=5000)
    assert _growth(customer) == 73
    assert services.growth_order_refunded(customer_id=cid, order_no="200", refund_no="200R2", refund_fen=7345)
    assert _growth(customer) == _ledger_sum(customer) == 0
    changes = list(GrowthEvent.objects.filter(order_no="200").order_by("id").values_list("reason", "change"))
    assert changes == [("order_completed", 123), ("order_refunded", -50), ("order_refunded", -73)]


def test_a_refund_before_completion_is_left_out_of_the_credit(customer, levels):
    cid = customer.pk
    assert services.growth_order_refunded(customer_id=cid, order_no="300", refund_no="300R1", refund_fen=3000)
    assert _growth(customer) == 0
    assert services.growth_order_completed(customer_id=cid, order_no="300", basis_fen=10_000)
    assert _growth(customer) == _ledger_sum(customer) == 70
    assert selectors.growth_events(customer_id=cid).count() == 1  # the 0 row is not shown


def test_a_refund_through_payments_takes_back_growth_by_its_follow_up(buyer, paid, levels):
    order, _ = paid(price_fen=6000, quantity=2)  # 120 yuan, balance paid
    row = Order.objects.get(order_no=order["order_no"])
    shipments.order_ship(order=row, actor="staff:test")
    buyer.api.post(f"/api/v1/orders/{row.order_no}/receive")
    _run(FollowUp.Kind.GROWTH_AWARD, row.order_no)
    assert _growth(buyer.customer) == 120
    response = buyer.api.post(
        f"/api/v1/orders/{row.order_no}/refund", {"reason": "不想要了", "amount_fen": 3050}, format="json"
    )
    assert response.status_code == 202, response.json()
    sale = row.after_sales.get()
    refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:test")
    refund.refresh_from_db()
    if refund.status != "success":
        refunds.refund_succeeded(refund=refund, credit_balance=True)
    assert _run(FollowUp.Kind.GROWTH_REVOKE, row.order_no) == ["done"]
    assert _growth(buyer.customer) == _ledger_sum(buyer.customer) == (12000 - 3050) // 100
    assert GrowthEvent.objects.get(reason="order_refunded").ref == refund.out_refund_no
