"""The draft's Redis shape: what the previous release wrote is read, and written back, unchanged.

Drafts live in Redis across a deploy: one written by the running release must be turned into an
order by the next one, and the other way round. ``OrderDraft`` is only the typed view of that
dict.
"""

import json
import pickle

import pytest
from django.core.cache import cache

from apps.orders import drafts
from apps.orders.drafts import DraftLine, OrderDraft
from apps.orders.models import Order, OrderLine

pytestmark = pytest.mark.django_db

DRAFT_KEYS = [
    "order_key",
    "customer_id",
    "kind",
    "expires_at",
    "lines",
    "goods_fen",
    "freight_fen",
    "coupon_id",
    "coupon_fen",
    "points_used",
    "points_fen",
    "pay_fen",
    "slot",
    "address",
    "flash_sale_id",
    "cart_items",
    "usable_coupons",
]
LINE_KEYS = ["sku_id", "product_id", "name", "specs", "price_fen", "quantity", "amount_fen"]


def goods_draft(*, customer_id=7, sku_id=11, product_id=5, order_key="ab" * 16) -> dict:
    """A goods draft exactly as the release before the typed draft wrote it."""
    return {
        "order_key": order_key,
        "customer_id": customer_id,
        "kind": "goods",
        "expires_at": "2026-12-01T23:30:00.123456+08:00",
        "lines": [
            {
                "sku_id": sku_id,
                "product_id": product_id,
                "name": "青瓷盖碗",
                "specs": {"颜色": "天青"},
                "price_fen": 3600,
                "quantity": 2,
                "amount_fen": 7200,
            }
        ],
        "goods_fen": 7200,
        "freight_fen": 1000,
        "coupon_id": None,
        "coupon_fen": 0,
        "points_used": 0,
        "points_fen": 0,
        "pay_fen": 8200,
        "slot": None,
        "address": {
            "id": 3,
            "name": "张三",
            "phone": "13800000000",
            "province": "浙江省",
            "city": "杭州市",
            "district": "西湖区",
            "detail": "文三路100号",
        },
        "flash_sale_id": None,
        "cart_items": [[21, 2]],
        "usable_coupons": [{"id": 9, "name": "满50减5", "discount_fen": 500}],
    }


def consultation_draft() -> dict:
    return {
        "order_key": "cd" * 16,
        "customer_id": 8,
        "kind": "consultation",
        "expires_at": "2026-12-01T23:30:00+08:00",
        "lines": [
            {
                "sku_id": 12,
                "product_id": 6,
                "name": "茶道咨询",
                "specs": {},
                "price_fen": 20000,
                "quantity": 1,
                "amount_fen": 20000,
            }
        ],
        "goods_fen": 20000,
        "freight_fen": 0,
        "coupon_id": 4,
        "coupon_fen": 2000,
        "points_used": 300,
        "points_fen": 300,
        "pay_fen": 17700,
        "slot": {
            "id": 2,
            "teacher_id": 1,
            "teacher_name": "李老师",
            "start": "2026-12-03T10:00:00+08:00",
            "end": "2026-12-03T11:00:00+08:00",
        },
        "address": None,
        "flash_sale_id": None,
        "cart_items": None,
        "usable_coupons": [{"id": 4, "name": "咨询券", "discount_fen": 2000}],
    }


@pytest.mark.parametrize("make", [goods_draft, consultation_draft])
def test_previous_release_draft_round_trips_byte_identical(make):
    stored = make()
    again = OrderDraft.from_json(stored).to_json()
    assert json.dumps(again, ensure_ascii=False) == json.dumps(stored, ensure_ascii=False)
    assert pickle.dumps(again) == pickle.dumps(stored)  # django-redis stores the pickled dict


def test_typed_draft_reads_fields_and_lines():
    draft = OrderDraft.from_json(consultation_draft())
    assert draft.lines == [
        DraftLine(sku_id=12, product_id=6, name="茶道咨询", specs={}, price_fen=20000, quantity=1, amount_fen=20000)
    ]
    assert (draft.slot_id, draft.units, draft.quantities, draft.coupon_fen) == (2, 1, {12: 1}, 2000)


def test_draft_older_than_flash_sales_and_cart_reads_with_defaults():
    stored = goods_draft()
    for key in ("flash_sale_id", "cart_items", "usable_coupons"):
        del stored[key]
    draft = OrderDraft.from_json(stored)
    assert (draft.flash_sale_id, draft.cart_items, draft.usable_coupons) == (None, None, [])


def test_confirm_stores_the_previous_release_shape(api, make_sku, address):
    sku = make_sku(price_fen=3600, stock=5)
    answer = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": sku.pk, "quantity": 2}], "address_id": address.pk},
        format="json",
    ).json()
    stored = cache.get(f"order:draft:{answer['order_key']}")
    assert list(stored) == DRAFT_KEYS
    assert [list(line) for line in stored["lines"]] == [LINE_KEYS]
    expected = goods_draft(
        customer_id=address.customer_id, sku_id=sku.pk, product_id=sku.product_id, order_key=answer["order_key"]
    )
    expected.update(
        expires_at=stored["expires_at"],
        cart_items=None,
        usable_coupons=[],
        address={"id": address.pk, **address.snapshot()},
    )
    assert stored == expected


def test_create_takes_a_draft_the_previous_release_wrote(api, make_sku, address):
    sku = make_sku(price_fen=3600, stock=5)
    stored = goods_draft(customer_id=address.customer_id, sku_id=sku.pk, product_id=sku.product_id)
    stored.update(cart_items=None, address={"id": address.pk, **address.snapshot()})
    drafts.draft_save(stored["order_key"], stored)
    response = api.post("/api/v1/orders", {"order_key": stored["order_key"]}, format="json")
    assert response.status_code == 201, response.content
    order = Order.objects.get(order_key=stored["order_key"])
    assert (order.goods_fen, order.freight_fen, order.pay_fen, order.address) == (7200, 1000, 8200, stored["address"])
    assert list(OrderLine.objects.filter(order=order).values_list("sku_id", "quantity", "amount_fen")) == [
        (sku.pk, 2, 7200)
    ]
    sku.refresh_from_db()
    assert sku.stock == 3


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"flash_sale_id": 7, "usable_coupons": []},
        {
            "coupon_id": 3,
            "coupon_fen": 500,
            "usable_coupons": [
                {"id": 3, "name": "满100减5", "discount_fen": 500},
                {"id": 4, "name": "折", "discount_fen": 1},
            ],
        },
        {
            "kind": "consultation",
            "address": None,
            "slot": {
                "id": 5,
                "teacher_id": 2,
                "teacher_name": "李明远",
                "start": "2026-12-03T09:00:00+08:00",
                "end": "2026-12-03T10:00:00+08:00",
            },
        },
        {"pickup_store": {"id": 1, "name": "西湖店", "address": "文三路 1 号", "phone": "0571", "hours": "9-21"}},
        {"group_buy_id": 9, "group_id": None},
        {"group_id": 12},
        {"bargain_no": "B2026120200000001"},
    ],
)
def test_the_confirm_answer_written_out_equals_drfs_generic_path(extra):
    from rest_framework import serializers

    from apps.orders.api.serializers import ConfirmOutSerializer, ReorderOutSerializer

    draft = {
        "order_key": "a" * 32,
        "customer_id": 1,
        "kind": "goods",
        "expires_at": "2026-12-02T12:00:00+08:00",
        "lines": [
            {"sku_id": 1, "product_id": 2, "name": "青瓷", "specs": {"颜色": "天青", 1: 2}, "price_fen": 990},
            {"sku_id": 3, "product_id": 4, "name": "盖碗", "specs": {}, "price_fen": 10, "quantity": 2},
        ],
        "goods_fen": 1010,
        "freight_fen": 800,
        "coupon_id": None,
        "coupon_fen": 0,
        "points_used": 0,
        "points_fen": 0,
        "pay_fen": 1810,
        "slot": None,
        "address": {"id": 9, "name": "张三", "province": "浙江省"},
        "flash_sale_id": None,
        "cart_items": None,
        **extra,
    }
    for line in draft["lines"]:
        line.setdefault("quantity", 1)
        line["amount_fen"] = line["price_fen"] * line["quantity"]
    serializer = ConfirmOutSerializer(draft)
    generic = serializers.Serializer.to_representation(serializer, draft)
    assert json.dumps(serializer.data, ensure_ascii=False) == json.dumps(generic, ensure_ascii=False)
    # reorder's answer: the same plus the lines it could not take again
    draft["missing"] = [{"sku_id": 5, "name": "旧款", "specs": {"颜色": "青"}, "quantity": 2, "reason": "off_sale"}]
    reorder = ReorderOutSerializer(draft)
    generic = serializers.Serializer.to_representation(reorder, draft)
    assert json.dumps(reorder.data, ensure_ascii=False) == json.dumps(generic, ensure_ascii=False)
    assert list(reorder.data)[-1] == "missing" and len(reorder.data["missing"]) == 1
