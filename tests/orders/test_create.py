"""Two-phase order: confirm prices and caches a draft; create turns it into one order, atomically."""

import datetime as dt

import pytest
from django.core.cache import cache
from django.db import transaction

from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.appointments import slots
from apps.appointments.models import Booking, Slot
from apps.catalog.models import Sku
from apps.orders.models import Order, OrderEvent, OrderLine

pytestmark = pytest.mark.django_db


def confirm(api, **body):
    return api.post("/api/v1/orders/confirm", body, format="json")


def test_confirm_prices_lines_freight_and_caches_draft(api, make_sku, address):
    sku = make_sku(price_fen=3600, stock=5)
    response = confirm(api, items=[{"sku_id": sku.pk, "quantity": 2}], address_id=address.pk)
    assert response.status_code == 200
    data = response.json()
    assert data["lines"] == [
        {
            "sku_id": sku.pk,
            "name": "青瓷盖碗",
            "specs": {"颜色": "天青"},
            "price_fen": 3600,
            "quantity": 2,
            "amount_fen": 7200,
        }
    ]
    assert (data["goods_fen"], data["freight_fen"], data["coupon_fen"], data["points_fen"]) == (7200, 1000, 0, 0)
    assert data["pay_fen"] == 8200
    assert len(data["order_key"]) == 32
    assert cache.get(f"order:draft:{data['order_key']}")["pay_fen"] == 8200
    assert Sku.objects.get(pk=sku.pk).stock == 5  # confirm takes nothing
    assert Order.objects.count() == 0


def test_confirm_free_freight_from_99_yuan_with_coupon_and_points(make_customer, make_api, make_sku):
    from apps.accounts.models import Address

    customer = make_customer(points=300)
    address = Address.objects.create(
        customer=customer, name="李四", phone="13900000000", province="北京市", city="北京市", detail="长安街1号"
    )
    coupon = Coupon.objects.create(
        customer=customer,
        title="满100减20",
        discount_fen=2000,
        min_spend_fen=10000,
        valid_until="2099-01-01T00:00:00+08:00",
    )
    sku = make_sku(price_fen=12800)
    data = confirm(
        make_api(customer),
        items=[{"sku_id": sku.pk, "quantity": 1}],
        address_id=address.pk,
        coupon_id=coupon.pk,
        use_points=200,
    ).json()
    assert (data["goods_fen"], data["freight_fen"], data["coupon_fen"], data["points_fen"]) == (12800, 0, 2000, 200)
    assert data["pay_fen"] == 12800 - 2000 - 200


def test_confirm_rejects_coupon_below_min_spend(api, customer, make_sku, address):
    coupon = Coupon.objects.create(
        customer=customer,
        title="满100减20",
        discount_fen=2000,
        min_spend_fen=10000,
        valid_until="2099-01-01T00:00:00+08:00",
    )
    sku = make_sku(price_fen=3600)
    response = confirm(api, items=[{"sku_id": sku.pk, "quantity": 1}], address_id=address.pk, coupon_id=coupon.pk)
    assert response.status_code == 409
    assert response.json()["code"] == "coupon_unavailable"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"items": []}, "items"),
        ({"items": [{"sku_id": 1, "quantity": 0}]}, "items"),
        ({"items": [{"sku_id": "x", "quantity": 1}]}, "items"),
        ({"items": [{"sku_id": 1, "quantity": 1}], "use_points": -3}, "use_points"),
    ],
)
def test_confirm_bad_input_is_400_invalid_with_field(api, body, field):
    response = confirm(api, **body)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert field in response.json()["detail"]


def test_confirm_goods_needs_own_address(api, make_sku, make_customer):
    from apps.accounts.models import Address

    other = make_customer()
    theirs = Address.objects.create(
        customer=other, name="王五", phone="13700000000", province="上海市", city="上海市", detail="南京路1号"
    )
    sku = make_sku()
    response = confirm(api, items=[{"sku_id": sku.pk, "quantity": 1}], address_id=theirs.pk)
    assert response.status_code == 400
    assert "address_id" in response.json()["detail"]


def test_confirm_more_than_stock_is_409(api, make_sku, address):
    sku = make_sku(stock=1)
    response = confirm(api, items=[{"sku_id": sku.pk, "quantity": 2}], address_id=address.pk)
    assert response.status_code == 409
    assert response.json()["code"] == "insufficient_stock"
    assert response.json()["detail"]["sku_id"] == sku.pk


def test_create_takes_stock_writes_lines_and_replay_returns_same_order(api, make_sku, address):
    a, b = make_sku(price_fen=3600, stock=5), make_sku(price_fen=6800, stock=3, name="公道杯")
    key = confirm(
        api, items=[{"sku_id": b.pk, "quantity": 1}, {"sku_id": a.pk, "quantity": 2}], address_id=address.pk
    ).json()["order_key"]
    first = api.post("/api/v1/orders", {"order_key": key, "remark": "请包装好"}, format="json")
    assert first.status_code == 201
    order = first.json()
    assert order["status"] == "unpaid"
    assert order["pay_fen"] == 3600 * 2 + 6800  # 14000 >= 9900: free freight
    assert order["address"]["city"] == "杭州市"
    assert order["pay_deadline"].endswith("+08:00")
    assert [Sku.objects.get(pk=s.pk).stock for s in (a, b)] == [3, 2]
    assert OrderLine.objects.filter(order__order_no=order["order_no"]).count() == 2
    assert OrderEvent.objects.filter(order__order_no=order["order_no"], to_status="unpaid").count() == 1

    again = api.post("/api/v1/orders", {"order_key": key}, format="json")
    assert again.status_code == 200
    assert again.json()["order_no"] == order["order_no"]
    assert Order.objects.count() == 1
    assert [Sku.objects.get(pk=s.pk).stock for s in (a, b)] == [3, 2]


def test_create_unknown_key_is_410_and_creates_nothing(api):
    response = api.post("/api/v1/orders", {"order_key": "0" * 32}, format="json")
    assert response.status_code == 410
    assert response.json()["code"] == "order_key_expired"
    assert Order.objects.count() == 0


def test_create_with_someone_elses_key_is_410(api, make_api, make_customer, make_sku, address):
    sku = make_sku()
    key = confirm(api, items=[{"sku_id": sku.pk, "quantity": 1}], address_id=address.pk).json()["order_key"]
    response = make_api(make_customer()).post("/api/v1/orders", {"order_key": key}, format="json")
    assert response.status_code == 410
    assert Order.objects.count() == 0
    assert Sku.objects.get(pk=sku.pk).stock == 10


def test_create_failing_line_rolls_back_every_line_coupon_points_and_keeps_draft(make_customer, make_api, make_sku):
    from apps.accounts.models import Address

    customer = make_customer(points=500)
    api = make_api(customer)
    address = Address.objects.create(
        customer=customer, name="李四", phone="13900000000", province="北京市", city="北京市", detail="长安街1号"
    )
    coupon = Coupon.objects.create(
        customer=customer,
        title="满100减20",
        discount_fen=2000,
        min_spend_fen=10000,
        valid_until="2099-01-01T00:00:00+08:00",
    )
    first, second = make_sku(price_fen=12800, stock=5), make_sku(price_fen=3600, stock=2, name="宣纸")
    key = confirm(
        api,
        items=[{"sku_id": first.pk, "quantity": 1}, {"sku_id": second.pk, "quantity": 2}],
        address_id=address.pk,
        coupon_id=coupon.pk,
        use_points=100,
    ).json()["order_key"]
    Sku.objects.filter(pk=second.pk).update(stock=1)  # someone else bought one meanwhile

    response = api.post("/api/v1/orders", {"order_key": key}, format="json")
    assert response.status_code == 409
    assert response.json() == {
        "code": "insufficient_stock",
        "message": response.json()["message"],
        "detail": {"sku_id": second.pk, "requested": 2},
    }
    assert Sku.objects.get(pk=first.pk).stock == 5  # taken before the failing line, given back
    assert Sku.objects.get(pk=second.pk).stock == 1
    assert Coupon.objects.get(pk=coupon.pk).status == "available"
    assert Customer.objects.get(pk=customer.pk).points == 500
    assert WalletEvent.objects.count() == 0
    assert Order.objects.count() == OrderLine.objects.count() == 0
    assert cache.get(f"order:draft:{key}") is not None  # the customer can retry the same key


def test_create_consultation_books_slot_in_same_transaction(api, consultation):
    slot = consultation.slots[3]
    key = confirm(api, items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=slot.pk).json()["order_key"]
    order = api.post("/api/v1/orders", {"order_key": key}, format="json").json()
    assert order["slot"]["id"] == slot.pk
    assert order["slot"]["start"].endswith("+08:00")
    assert order["freight_fen"] == 0 and order["pay_fen"] == 29900
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 1
    assert Booking.objects.get(order_no=order["order_no"]).slot_id == slot.pk


def test_create_full_slot_is_409_and_stock_untouched(api, make_api, make_customer, consultation):
    slot = consultation.slots[0]
    key = confirm(api, items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=slot.pk).json()["order_key"]
    taker = make_customer()
    with transaction.atomic():  # taken meanwhile
        slots.slot_book_start(product_id=consultation.product.pk, start=slot.start, order_no="T1", customer_id=taker.pk)
    response = api.post("/api/v1/orders", {"order_key": key}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "slot_unavailable"
    assert Sku.objects.get(pk=consultation.sku.pk).stock == 1000
    assert Order.objects.count() == 0
    assert list(Booking.objects.values_list("order_no", "customer_id")) == [("T1", taker.pk)]


def test_confirm_slot_of_another_teacher_is_409(api, consultation):
    from apps.catalog.models import Teacher

    other = Teacher.objects.create(name="王婉清")
    slot = Slot.objects.create(teacher=other, start=consultation.slots[0].start, end=consultation.slots[0].end)
    response = confirm(api, items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=slot.pk)
    assert response.status_code == 409
    assert response.json()["code"] == "slot_unavailable"


def test_create_sends_no_message_and_the_sweep_cancels_at_the_deadline(
    api, make_sku, address, django_capture_on_commit_callbacks, queued
):
    """The unpaid timeout is the order's pay_deadline read by the sweep: create
    pushes nothing to the broker; after commit it only drops the draft."""
    from apps.payments import order_lifecycle

    sku = make_sku(stock=5)
    key = confirm(api, items=[{"sku_id": sku.pk, "quantity": 2}], address_id=address.pk).json()["order_key"]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        api.post("/api/v1/orders", {"order_key": key}, format="json")
    assert len(callbacks) == 1  # drop the draft
    callbacks[0]()
    assert queued("default") == []
    assert cache.get(f"order:draft:{key}") is None
    order = Order.objects.get(order_key=key)
    sku.refresh_from_db()
    assert sku.stock == 3
    assert order_lifecycle.orders_expire_due(now=order.pay_deadline - dt.timedelta(seconds=1)) == {}
    assert order_lifecycle.orders_expire_due(now=order.pay_deadline) == {"cancelled": 1}
    order.refresh_from_db()
    sku.refresh_from_db()
    assert (order.status, sku.stock) == ("cancelled", 5)


def test_create_replay_after_the_winner_dropped_the_draft_returns_the_order(api, make_sku, address, monkeypatch):
    """The race the concurrency suite hit, in today's order of reads (draft first):
    the replay finds the draft gone because the first create committed and dropped it, so one
    order lookup must find the winner's order (it was committed before the draft was dropped)."""
    from apps.orders import create, drafts

    sku = make_sku()
    key = confirm(api, items=[{"sku_id": sku.pk, "quantity": 1}], address_id=address.pk).json()["order_key"]
    winner = api.post("/api/v1/orders", {"order_key": key}, format="json").json()
    drafts.draft_delete(key)
    real = create._replay
    calls = []

    def counted(request):
        calls.append(request.order_key)
        return real(request)

    monkeypatch.setattr(create, "_replay", counted)
    replay = api.post("/api/v1/orders", {"order_key": key}, format="json")
    assert replay.status_code == 200
    assert replay.json()["order_no"] == winner["order_no"]
    assert len(calls) == 1


def test_create_replay_that_read_the_draft_before_the_winner_dropped_it_returns_the_order(api, make_sku, address):
    """The other side of that race: the replay still reads the draft (the winner committed but
    has not dropped it yet); its INSERT meets UNIQUE(order_key), everything it took rolls back
    and it answers with the winner's order."""
    from apps.catalog.models import Sku
    from apps.orders import drafts
    from apps.orders.models import Order

    sku = make_sku(stock=5)
    key = confirm(api, items=[{"sku_id": sku.pk, "quantity": 2}], address_id=address.pk).json()["order_key"]
    draft = drafts.draft_get(key)
    winner = api.post("/api/v1/orders", {"order_key": key}, format="json").json()
    drafts.draft_save(key, draft)  # as if the winner's on_commit had not run yet
    replay = api.post("/api/v1/orders", {"order_key": key}, format="json")
    assert replay.status_code == 200
    assert replay.json()["order_no"] == winner["order_no"]
    assert Order.objects.filter(order_key=key).count() == 1
    assert Sku.objects.get(pk=sku.pk).stock == 3
