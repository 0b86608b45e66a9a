"""Members in the exports: the orders export carries the customer's level and SVIP expiry, the
付费会员卡 export lists the cards paid in the range with what was refunded; both typed."""

import csv
import datetime as dt
import io

import pytest
from django.utils import timezone

from apps.members import services
from apps.members.models import Level, MemberCard, Membership
from apps.orders.models import Order, OrderStatus

pytestmark = pytest.mark.django_db


def _csv(client, kind: str) -> list[list[str]]:
    day = timezone.localdate().isoformat()
    response = client.get("/admin/backoffice/export/", {"kind": kind, "start": day, "end": day, "fmt": "csv"})
    assert response.status_code == 200
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))


def test_the_orders_export_carries_level_and_svip(role_client, make_customer):
    Level.objects.create(name="普通会员", growth_min=0, discount_percent=100)
    Level.objects.create(name="金卡", growth_min=5000, discount_percent=95)
    gold, plain = make_customer(), make_customer()
    services.growth_order_completed(customer_id=gold.pk, order_no="G0", basis_fen=600_000)
    expires = timezone.localtime().replace(microsecond=0) + dt.timedelta(days=30)
    Membership.objects.filter(customer=gold).update(svip_expires_at=expires)
    now = timezone.now()
    for no, customer in (("E1", gold), ("E2", plain)):
        Order.objects.create(
            order_no=no, order_key=no, customer=customer, status=OrderStatus.PAID, goods_fen=100, pay_fen=100,
            pay_deadline=now, paid_at=now,
        )  # fmt: skip
    table = _csv(role_client("财务"), "orders")
    level, svip = table[0].index("顾客会员等级（导出时）"), table[0].index("付费会员到期（北京时间）")
    rows = {row[0]: (row[level], row[svip]) for row in table[1:]}
    assert rows == {"E1": ("金卡", expires.strftime("%Y-%m-%d %H:%M")), "E2": ("普通会员", "")}


def test_the_member_card_export_lists_cards_paid_with_their_refunds(role_client, customer):
    card = MemberCard.objects.create(name="月卡", days=30, pay_fen=1990)
    paid = services.card_purchase_create(customer=customer, card_id=card.pk, api="v3")
    services.card_purchase_apply_paid(purchase=paid, transaction_id="4200000077", paid_at=timezone.now())
    services.card_purchase_refunded(purchase=paid, refund_fen=990)
    services.card_purchase_create(customer=customer, card_id=card.pk, api="v2")  # never paid: not listed
    table = _csv(role_client("财务"), "member_cards")
    header, rows = table[0], table[1:]
    assert [dict(zip(header, row, strict=True))["购买单号"] for row in rows] == [paid.purchase_no]
    row = dict(zip(header, rows[0], strict=True))
    assert (row["会员卡"], row["状态"], row["支付（元）"], row["已退（元）"], row["支付接口"], row["微信支付单号"]) == (
        "月卡",
        "已退款",
        "19.90",
        "9.90",
        "v3",
        "4200000077",
    )
