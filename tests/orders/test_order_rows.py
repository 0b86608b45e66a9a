"""The order's rows at create: the hand-written PostgreSQL statement (``apps.orders.order_rows``)
against the ORM's three INSERTs, field by field, for the rows stored and the instances returned."""

import datetime as dt

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone

from apps.orders import drafts, order_rows
from apps.orders.models import Order, OrderEvent, OrderLine

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

NOW = timezone.localtime(dt.datetime(2026, 12, 2, 9, 30, 15, 123456, tzinfo=dt.UTC))


def _draft(key: str, skus, *, flash_sale_id=None, coupon=None, points=0, address=True) -> drafts.OrderDraft:
    lines = [
        drafts.DraftLine(
            sku_id=sku.pk,
            product_id=sku.product_id,
            name=f"商品 “{i}” 's",
            specs={"颜色": "天青", "n": i},
            price_fen=1000 + i,
            quantity=i + 1,
            amount_fen=(1000 + i) * (i + 1),
        )
        for i, sku in enumerate(skus)
    ]
    goods = sum(line.amount_fen for line in lines)
    return drafts.OrderDraft(
        order_key=key,
        customer_id=0,
        kind="goods",
        expires_at=NOW.isoformat(),
        lines=lines,
        goods_fen=goods,
        freight_fen=800,
        coupon_id=coupon.pk if coupon else None,
        coupon_fen=300 if coupon else 0,
        points_used=points,
        points_fen=points,
        pay_fen=goods + 800 - (300 if coupon else 0) - points,
        slot=None,
        address={
            "id": 9,
            "name": "张三",
            "phone": "13800000000",
            "province": "浙江省",
            "city": "杭州市",
            "district": "西湖区",
            "detail": '文三路 100 号 "A" 座',
        }
        if address
        else None,
        flash_sale_id=flash_sale_id,
        cart_items=None,
        usable_coupons=[],
    )


def _rows(order_id: int) -> tuple[dict, list[dict], list[dict]]:
    order = model_to_dict(Order.objects.get(pk=order_id), exclude=["id", "order_no", "order_key"])
    order["created_at"] = Order.objects.values_list("created_at", flat=True).get(pk=order_id)
    lines = [
        {k: v for k, v in model_to_dict(line).items() if k not in ("id", "order")}
        for line in OrderLine.objects.filter(order_id=order_id).order_by("id")
    ]
    events = [
        {k: v for k, v in model_to_dict(e).items() if k not in ("id", "order")} | {"created_at": e.created_at}
        for e in OrderEvent.objects.filter(order_id=order_id).order_by("id")
    ]
    return order, lines, events


def _instance(order: Order, lines: list[OrderLine]) -> tuple[dict, list[dict]]:
    fields = {
        f.attname: getattr(order, f.attname)
        for f in Order._meta.concrete_fields
        if f.attname not in ("id", "order_no", "order_key")
    }
    return fields, [
        {
            f.attname: getattr(line, f.attname)
            for f in OrderLine._meta.concrete_fields
            if f.attname not in ("id", "order_id")
        }
        for line in lines
    ]


@pytest.mark.parametrize("shape", ["flash_sale", "three_lines_coupon_points", "no_address", "pickup"])
def test_the_statement_writes_and_returns_what_the_orm_does(shape, customer, make_sku, monkeypatch, is_postgres):
    from apps.accounts.models import Coupon
    from apps.marketing.models import FlashSale

    assert is_postgres
    monkeypatch.setattr(timezone, "now", lambda: NOW)  # the ORM's auto_now_add reads the same clock
    skus = [make_sku() for _ in range(3 if shape == "three_lines_coupon_points" else 1)]
    extra = {}
    if shape == "flash_sale":
        extra["flash_sale_id"] = FlashSale.objects.create(
            title="秒杀", sku=skus[0], price_fen=900, stock=5, starts_at=NOW, ends_at=NOW + dt.timedelta(hours=1)
        ).pk
    elif shape == "three_lines_coupon_points":
        extra.update(
            coupon=Coupon.objects.create(
                customer=customer, title="满减", discount_fen=300, valid_until=NOW + dt.timedelta(days=1)
            ),
            points=50,
        )
    else:  # no address: a consultation, or a self-pickup order with its store's columns
        extra["address"] = False
    columns = {}
    if shape == "pickup":
        columns = {
            "delivery": "pickup",
            "pickup_store_id": 7,
            "pickup_store": {"id": 7, "name": "西湖店", "address": "杭州市西湖区文三路 1 号"},
        }
    deadline = NOW + dt.timedelta(minutes=15)
    made = {}

    def pg_insert(draft, fields, now):
        return order_rows._pg_insert([(draft, fields)], now)[0]

    for path, insert in (("orm", order_rows._orm_insert), ("sql", pg_insert)):
        draft = _draft(f"key-{path}", skus, **extra)
        fields = order_rows.order_fields(
            draft,
            customer_id=customer.pk,
            order_no=f"no-{path}",
            remark="请周末送达 'x'",
            pay_deadline=deadline,
            now=NOW,
            extra=columns,
        )
        order, lines = insert(draft, fields, NOW)
        assert (order.order_no, order.order_key) == (f"no-{path}", f"key-{path}")
        assert [line.order_id for line in lines] == [order.pk] * len(skus)
        assert not order._state.adding and all(not line._state.adding for line in lines)
        made[path] = (_rows(order.pk), _instance(order, lines))
    assert made["sql"] == made["orm"]
    (order, lines, events), _ = made["sql"]
    assert order["created_at"] == NOW and order["status"] == "unpaid" and len(lines) == len(skus)
    assert events == [
        {"from_status": "", "to_status": "unpaid", "actor": "customer", "note": "下单", "created_at": NOW}
    ]


@pytest.mark.postgres
def test_several_orders_rows_go_in_one_round_trip_each_as_alone(customer, make_sku):
    """``orders_rows_insert``: the statements of three orders sent together give the rows and
    instances each would have alone (ids aside), in the order given."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    skus = [make_sku(stock=10) for _ in range(2)]
    entries = [
        dict(
            draft=_draft(f"key-many-{i}", skus[: i % 2 + 1]),
            customer_id=customer.pk,
            order_no=f"no-many-{i}",
            remark="",
            pay_deadline=NOW + dt.timedelta(minutes=15),
            now=NOW,
        )
        for i in range(3)
    ]
    with CaptureQueriesContext(connection) as queries:
        made = order_rows.orders_rows_insert(entries)
    assert len(queries.captured_queries) == 1
    assert [order.order_no for order, _ in made] == ["no-many-0", "no-many-1", "no-many-2"]
    assert [len(lines) for _, lines in made] == [1, 2, 1]
    for order, lines in made:
        assert Order.objects.values_list("order_key", flat=True).get(pk=order.pk) == order.order_key
        assert _rows(order.pk)[0]["customer"] == customer.pk
        assert [line.order_id for line in lines] == [order.pk] * len(lines)
