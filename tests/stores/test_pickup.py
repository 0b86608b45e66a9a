"""Self-pickup (自提): stores nearest first, confirm without address or freight, a code and QR
when paid, verification by the store's staff once (back office and command), refunds of
uncollected orders without a return, never shipped, the dashboard's to-do row."""

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.orders import shipments
from apps.orders.models import Order, OrderStatus
from apps.stores import services
from apps.stores.exceptions import AlreadyVerified, Forbidden
from apps.stores.models import PickupVerification, Store
from starmall.errors import InvalidInput, InvalidState, NotFound

pytestmark = pytest.mark.django_db


def test_stores_nearest_first_with_distance(client, store):
    far = Store.objects.create(name="上海店", address="上海", lat="31.230400", lng="121.473700")
    Store.objects.create(name="停业店", address="x", lat="30.2789", lng="120.1452", is_active=False)
    plain = client.get("/api/v1/stores", HTTP_AUTHORIZATION="Bearer bad").json()
    assert [s["id"] for s in plain] == [store.pk, far.pk] and plain[0]["distance_m"] is None
    near_shanghai = client.get("/api/v1/stores", {"lat": 31.2304, "lng": 121.4737}).json()
    assert [s["id"] for s in near_shanghai] == [far.pk, store.pk]
    assert near_shanghai[0]["distance_m"] == 0
    assert 160_000 < near_shanghai[1]["distance_m"] < 170_000  # Hangzhou–Shanghai, as the crow flies
    assert set(near_shanghai[0]) == {"id", "name", "address", "phone", "hours", "lat", "lng", "distance_m"}
    assert client.get("/api/v1/stores", {"lat": 31}).json()["code"] == "invalid"
    assert client.get("/api/v1/stores", {"lat": 91, "lng": 0}).status_code == 400


def test_confirm_pickup_has_no_address_and_no_freight(api, make_sku, store):
    sku = make_sku(price_fen=3600)  # below free shipping: express would cost 1000 fen
    data = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": sku.pk, "quantity": 1}], "delivery": "pickup", "store_id": store.pk},
        format="json",
    ).json()
    assert (data["freight_fen"], data["pay_fen"], data["address"], data["delivery"]) == (0, 3600, None, "pickup")
    assert data["pickup_store"]["name"] == "西湖店"
    created = api.post("/api/v1/orders", {"order_key": data["order_key"]}, format="json").json()
    assert created["delivery"] == "pickup" and created["freight_fen"] == 0 and created["address"] is None
    assert created["pickup"] == {"store": data["pickup_store"], "code": None, "qr": None, "verified_at": None}
    order = Order.objects.get(order_no=created["order_no"])
    assert (order.pickup_store_id, order.pickup_code) == (store.pk, "")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"delivery": "pickup", "store_id": 999999}, "store_id"),
        ({"delivery": "pickup"}, "store_id"),
        ({"delivery": "drone"}, "delivery"),
    ],
)
def test_confirm_pickup_refusals(api, make_sku, store, body, field):
    sku = make_sku()
    response = api.post("/api/v1/orders/confirm", {"items": [{"sku_id": sku.pk, "quantity": 1}], **body}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and field in response.json()["detail"]


def test_closed_store_is_refused(api, make_sku, store):
    Store.objects.filter(pk=store.pk).update(is_active=False)
    response = api.post(
        "/api/v1/orders/confirm",
        {"items": [{"sku_id": make_sku().pk, "quantity": 1}], "delivery": "pickup", "store_id": store.pk},
        format="json",
    )
    assert response.status_code == 400 and "store_id" in response.json()["detail"]


def test_paid_pickup_gets_a_code_and_qr(make_api, paid_pickup):
    order = paid_pickup()
    assert order.status == OrderStatus.PAID and len(order.pickup_code) == 8 and order.pickup_code.isdigit()
    data = make_api(order.customer).get(f"/api/v1/orders/{order.order_no}").json()
    assert data["pickup"]["code"] == order.pickup_code
    assert data["pickup"]["qr"].startswith("data:image/png;base64,")
    assert data["pickup"]["store"]["id"] == order.pickup_store_id


def test_codes_are_unique_among_live_pickup_orders(paid_pickup, monkeypatch):
    from apps.orders import pickup

    first = paid_pickup()
    draws = iter([int(first.pickup_code), 12345678])  # the first draw collides with a live order
    monkeypatch.setattr(pickup.secrets, "randbelow", lambda n: next(draws))
    second = paid_pickup()
    assert second.pickup_code == "12345678" and second.status == OrderStatus.PAID


def test_staff_verify_completes_once_and_refuses_the_second_saying_when_and_who(paid_pickup, make_staff, store):
    order = paid_pickup()
    staff = make_staff("clerk", store)
    verified = services.pickup_verify(code=order.pickup_code, user=staff)
    assert verified.status == OrderStatus.COMPLETED
    order.refresh_from_db()
    assert (order.status, order.pickup_verified_by) == (OrderStatus.COMPLETED, "clerk")
    assert order.completed_at == order.pickup_verified_at
    assert PickupVerification.objects.get().order_id == order.pk
    with pytest.raises(AlreadyVerified) as refused:
        services.pickup_verify(code=order.pickup_code, user=make_staff("clerk2", store))
    when = timezone.localtime(order.pickup_verified_at).strftime("%Y-%m-%d %H:%M")
    assert when in refused.value.message and "clerk" in refused.value.message
    assert refused.value.detail["verified_at"] == when
    assert PickupVerification.objects.count() == 1
    assert order.events.filter(to_status="completed").count() == 1


def test_verify_checks_store_permission_and_code(paid_pickup, make_staff, store, django_user_model):
    order = paid_pickup()
    other = Store.objects.create(name="别店", address="x", lat=0, lng=0)
    with pytest.raises(Forbidden):
        services.pickup_verify(code=order.pickup_code, user=make_staff("elsewhere", other))
    with pytest.raises(Forbidden):
        services.pickup_verify(code=order.pickup_code, user=make_staff("unbound"))
    plain = django_user_model.objects.create_user(username="plain", is_staff=True)
    with pytest.raises(Forbidden):
        services.pickup_verify(code=order.pickup_code, user=plain)
    with pytest.raises(InvalidInput):
        services.pickup_verify(code="12ab", user=make_staff("c1", store))
    with pytest.raises(NotFound):
        services.pickup_verify(
            code="00000000" if order.pickup_code != "00000000" else "00000001", user=make_staff("c2", store)
        )
    assert Order.objects.get(pk=order.pk).status == OrderStatus.PAID
    boss = django_user_model.objects.create_superuser(username="boss", password="x")
    assert services.pickup_verify(code=order.pickup_code, user=boss).status == OrderStatus.COMPLETED


def test_command_verifies_and_exits_nonzero_when_refused(paid_pickup, make_staff, store, capsys):
    order = paid_pickup()
    make_staff("clerk", store)
    call_command("pickup_verify", order.pickup_code, "--by", "clerk")
    assert order.order_no in capsys.readouterr().out
    assert Order.objects.get(pk=order.pk).status == OrderStatus.COMPLETED
    with pytest.raises(CommandError, match=r"已于 \d{4}-\d{2}-\d{2} \d{2}:\d{2} 由 clerk 核销"):
        call_command("pickup_verify", order.pickup_code, "--by", "clerk")
    with pytest.raises(CommandError):
        call_command("pickup_verify", order.pickup_code, "--by", "nobody")


def test_pickup_orders_are_never_shipped(paid_pickup):
    order = paid_pickup()
    assert shipments.order_ship(order=order, actor="staff:t") is False
    assert shipments.order_ship(order=order, actor="staff:t", carrier_code="ems", tracking_no="EM000111222CN") is False
    assert Order.objects.get(pk=order.pk).status == OrderStatus.PAID


def test_refund_of_an_uncollected_pickup_needs_no_return_and_restocks(paid_pickup, make_staff, store):
    from apps.catalog.models import Sku
    from apps.payments import refunds, returns

    order = paid_pickup()
    sku_id = order.lines.get().sku_id
    assert Sku.objects.get(pk=sku_id).stock == 8
    sale = refunds.refund_request(order_no=order.order_no, customer_id=order.customer_id, reason="不想要了")
    with pytest.raises(InvalidState):  # "return first" is only for goods that left the shop
        returns.after_sale_approve_return(after_sale_id=sale.pk, actor="staff:t")
    with pytest.raises(InvalidState):  # a waiting refund request blocks the hand-over
        services.pickup_verify(code=order.pickup_code, user=make_staff("clerk", store))
    refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:t")
    from apps.payments.models import Refund

    refunds.refund_execute(refund_id=Refund.objects.get().pk)
    order.refresh_from_db()
    assert order.status == OrderStatus.REFUNDED
    assert Sku.objects.get(pk=sku_id).stock == 10  # back on the shelf
    order.customer.refresh_from_db()
    assert order.customer.balance_fen == 100_000
    with pytest.raises(InvalidState):
        services.pickup_verify(code=order.pickup_code, user=make_staff("clerk3", store))


def test_dashboard_todo_counts_pickups_waiting(paid_pickup):
    from apps.backoffice.selectors import todo_counts

    paid_pickup()
    counts = todo_counts()
    assert (counts["pickups_waiting"], counts["to_ship"]) == (1, 0)


def test_verification_is_logged_on_the_order(paid_pickup, make_staff, store):
    order = paid_pickup()
    services.pickup_verify(code=f" {order.pickup_code[:4]} {order.pickup_code[4:]} ", user=make_staff("clerk", store))
    event = order.events.get(to_status="completed")
    assert (event.from_status, event.actor, event.note) == ("paid", "staff:clerk", "到店自提核销")


def test_seed_is_idempotent_and_gives_the_demo_login(db):
    from django.contrib.auth import authenticate

    call_command("seed_stores")
    call_command("seed_stores")
    assert Store.objects.count() == 1
    user = authenticate(username="store", password="starmall-store")
    assert user is not None and user.store_staff.store == Store.objects.get()
