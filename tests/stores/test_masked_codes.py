"""Pickup codes are shown only to their customer: every back-office page, log, export and
alert a store's staff or an admin can open shows ``****`` and the last four digits, and no
list can be searched or filtered by a code (that would be a verification without its throttle)."""

import io
import zipfile

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.orders.models import Order
from apps.stores import services
from apps.stores.models import PickupVerification

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_orders(paid_pickup, make_staff, store):
    """A live pickup order and a verified one (its verification logged), the clerk who verified."""
    clerk = make_staff("clerk", store)
    live, done = paid_pickup(), paid_pickup()
    services.pickup_verify(code=done.pickup_code, user=clerk)
    with pytest.raises(services.NotFound):  # a wrong code: logged (masked) for the managers
        services.pickup_verify(code=f"{(int(live.pickup_code) + 1) % 10**8:08d}", user=clerk)
    return live, Order.objects.get(pk=done.pk), clerk


def _body(response) -> bytes:
    assert response.status_code == 200, response.status_code
    return b"".join(response.streaming_content) if response.streaming else response.content


def _xlsx_text(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        return b"".join(book.read(name) for name in book.namelist())


def _assert_masked_only(pages: dict[str, bytes], orders) -> None:
    for order in orders:
        for name, body in pages.items():
            assert order.pickup_code.encode() not in body, f"{order.order_no}'s code on {name}"


def test_store_staff_see_codes_masked_on_the_list_the_order_and_the_log(client, two_orders):
    live, done, clerk = two_orders
    client.force_login(clerk)
    pages = {
        "list": _body(client.get(reverse("admin:stores_pickuporder_changelist"))),
        "order": _body(client.get(reverse("admin:stores_pickuporder_change", args=[live.pk]))),
        "done": _body(client.get(reverse("admin:stores_pickuporder_change", args=[done.pk]))),
        "log": _body(client.get(reverse("admin:stores_pickupverification_changelist"))),
        "verify": _body(client.get(reverse("admin:stores_pickup_verify"))),
    }
    _assert_masked_only(pages, [live, done])
    assert f"****{live.pickup_code[-4:]}".encode() in pages["list"] and live.order_no.encode() in pages["list"]
    assert f"****{live.pickup_code[-4:]}".encode() in pages["order"]
    assert f"****{done.pickup_code[-4:]}".encode() in pages["log"]
    assert PickupVerification.objects.get().code == f"****{done.pickup_code[-4:]}"


def test_an_admin_sees_codes_masked_everywhere_an_order_shows(client, django_user_model, two_orders):
    live, done, _ = two_orders
    client.force_login(django_user_model.objects.create_superuser("boss", password="pw-boss"))
    today = timezone.localdate().isoformat()
    export = {"kind": "orders", "start": today, "end": today}
    pages = {
        "orders": _body(client.get(reverse("admin:orders_order_changelist"))),
        "search": _body(client.get(reverse("admin:orders_order_changelist"), {"q": live.order_no})),
        "pickups": _body(client.get(reverse("admin:stores_pickuporder_changelist"))),
        "verifications": _body(client.get(reverse("admin:stores_pickupverification_changelist"))),
        "failures": _body(client.get(reverse("admin:stores_pickupverifyfailure_changelist"))),
        "events": _body(client.get(reverse("admin:orders_orderevent_changelist"))),
        "alerts": _body(client.get(reverse("admin:alerts_alert_changelist"))),
        "csv": _body(client.get("/admin/backoffice/export/", {**export, "fmt": "csv"})),
        "xlsx": _xlsx_text(_body(client.get("/admin/backoffice/export/", {**export, "fmt": "xlsx"}))),
        "dashboard": _body(client.get("/admin/")),
    }
    for order in (live, done):
        for name in ("change", "history"):
            pages[f"{order.order_no} {name}"] = _body(
                client.get(reverse(f"admin:orders_order_{name}", args=[order.pk]))
            )
        pages[f"{order.order_no} slip"] = _body(client.get(reverse("admin:orders_order_slip", args=[order.pk])))
    _assert_masked_only(pages, [live, done])
    assert live.order_no.encode() in pages["search"] and live.order_no.encode() in pages["csv"]
    assert f"****{live.pickup_code[-4:]}".encode() in pages[f"{live.order_no} change"]
    assert f"****{live.pickup_code[-4:]}".encode() in pages["pickups"]
    wrong = f"{(int(live.pickup_code) + 1) % 10**8:08d}"
    assert f"****{wrong[-4:]}".encode() in pages["failures"] and wrong.encode() not in pages["failures"]


@pytest.mark.parametrize("login", ["clerk", "admin"])
def test_no_list_finds_an_order_by_its_code(client, django_user_model, two_orders, login):
    live, _, clerk = two_orders
    user = clerk if login == "clerk" else django_user_model.objects.create_superuser("boss", password="pw-boss")
    client.force_login(user)
    pickups = reverse("admin:stores_pickuporder_changelist")
    searched = _body(client.get(pickups, {"q": live.pickup_code}))
    assert live.order_no.encode() not in searched
    lists = [pickups] + ([reverse("admin:orders_order_changelist")] if login == "admin" else [])
    for url in lists:
        for lookup in ("pickup_code", "pickup_code__startswith", "pickup_code__exact", "pickup_code__in"):
            response = client.get(url, {lookup: live.pickup_code})
            assert response.status_code == 400, (url, lookup, response.status_code)
    assert client.get(pickups, {"order_no": live.order_no}).status_code == 200  # other lookups still work
