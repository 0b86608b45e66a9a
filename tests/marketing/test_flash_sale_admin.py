"""Staff schedule flash sales in the admin: the rules as form errors, the named permission,
the stock changed only relatively; and the scheduling service's rules themselves."""

import datetime as dt

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from apps.marketing import flash_sales
from apps.marketing.models import FlashSale
from starmall.admin_money import yuan
from starmall.errors import InvalidInput

pytestmark = pytest.mark.django_db

ADD = reverse("admin:marketing_flashsale_add")


def _split(value: dt.datetime, name: str) -> dict:
    local = timezone.localtime(value)
    return {f"{name}_0": local.strftime("%Y-%m-%d"), f"{name}_1": local.strftime("%H:%M:%S")}


def _form(sku, *, price_fen=9900, stock=5, starts_in=60, lasts=30, limit=2, **extra):
    starts_at = (timezone.now() + dt.timedelta(minutes=starts_in)).replace(microsecond=0)
    return {
        "title": "双十二秒杀",
        "product": sku.product_id,
        "sku": sku.pk,
        "price_fen": yuan(price_fen),
        "stock": stock,  # the form takes yuan
        **_split(starts_at, "starts_at"),
        **_split(starts_at + dt.timedelta(minutes=lasts), "ends_at"),
        "limit_per_customer": limit,
        "is_active": "on",
        **extra,
    }


@pytest.fixture
def clerk(client, django_user_model):
    """Staff who may look at flash sales but not manage them."""
    user = django_user_model.objects.create_user("clerk", password="pw-123456", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_flashsale"))
    client.login(username="clerk", password="pw-123456")
    return client, user


def test_flash_sale_admin_schedules_a_sale_in_shanghai_time(boss, flash_sku):
    response = boss.post(ADD, _form(flash_sku))
    assert response.status_code == 302, response.context["adminform"].form.errors
    sale = FlashSale.objects.get()
    assert (sale.sku_id, sale.price_fen, sale.stock, sale.sold, sale.limit_per_customer, sale.is_active) == (
        flash_sku.pk,
        9900,
        5,
        0,
        2,
        True,
    )
    assert timezone.localtime(sale.starts_at).utcoffset() == dt.timedelta(hours=8)
    assert sale.ends_at - sale.starts_at == dt.timedelta(minutes=30)
    assert flash_sku.__class__.objects.get(pk=flash_sku.pk).stock == 20  # scheduling takes no units


@pytest.mark.parametrize(
    "change, field",
    [
        ({"lasts": -5}, "ends_at"),
        ({"price_fen": 0}, "price_fen"),
        ({"price_fen": 12801}, "price_fen"),
        ({"stock": 21}, "stock"),
        ({"stock": 0}, "stock"),
        ({"limit": 0}, "limit_per_customer"),
        ({"starts_in": -120, "lasts": 60}, "ends_at"),
        ({"lasts": 32 * 24 * 60}, "ends_at"),
    ],
)
def test_flash_sale_admin_rules_are_form_errors(boss, flash_sku, change, field):
    response = boss.post(ADD, _form(flash_sku, **change))
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert FlashSale.objects.count() == 0


def test_flash_sale_admin_changes_stock_only_relatively(boss, make_sale):
    sale = make_sale(stock=5)
    FlashSale.objects.filter(pk=sale.pk).update(stock=3, sold=2)  # two units sold since the page opened
    url = reverse("admin:marketing_flashsale_change", args=[sale.pk])
    page = boss.get(url)
    assert page.status_code == 200
    data = _form(sale.sku, stock=999, stock_change=4, limit=3)
    data.update(_split(sale.starts_at, "starts_at"))  # a started sale keeps its start
    response = boss.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, sale.limit_per_customer) == (7, 2, 3)  # 3 + 4, never 999
    data["stock_change"] = -8
    boss.post(url, data)
    sale.refresh_from_db()
    assert sale.stock == 7  # cannot withdraw more than is left


def test_flash_sale_admin_started_sale_keeps_its_start(boss, make_sale):
    sale = make_sale()
    url = reverse("admin:marketing_flashsale_change", args=[sale.pk])
    response = boss.post(url, _form(sale.sku, starts_in=5))
    assert response.status_code == 200
    assert "starts_at" in response.context["adminform"].form.errors


def test_flash_sale_admin_needs_the_manage_permission(clerk, flash_sku, make_sale):
    client, user = clerk
    sale = make_sale()
    assert client.get(reverse("admin:marketing_flashsale_changelist")).status_code == 200
    assert client.get(ADD).status_code == 403
    assert client.post(ADD, _form(flash_sku)).status_code == 403
    url = reverse("admin:marketing_flashsale_change", args=[sale.pk])
    client.post(url, _form(flash_sku, stock_change=10))
    assert FlashSale.objects.get(pk=sale.pk).stock == 5
    assert FlashSale.objects.count() == 1

    user.user_permissions.add(Permission.objects.get(codename="manage_flashsale"))
    assert client.post(ADD, _form(flash_sku)).status_code == 302
    assert FlashSale.objects.count() == 2


def test_flash_sale_schedule_refuses_a_consultation_and_naive_times(consultation, flash_sku):
    now = timezone.now()
    with pytest.raises(InvalidInput) as refused:
        flash_sales.flash_sale_schedule(
            title="x",
            sku_id=consultation.sku.pk,
            price_fen=100,
            stock=1,
            starts_at=now,
            ends_at=now + dt.timedelta(hours=1),
        )
    assert list(refused.value.detail) == ["sku"]
    with pytest.raises(InvalidInput) as naive:
        flash_sales.flash_sale_schedule(
            title="x",
            sku_id=flash_sku.pk,
            price_fen=100,
            stock=1,
            starts_at=dt.datetime(2030, 1, 1, 20),
            ends_at=dt.datetime(2030, 1, 1, 21),
        )
    assert list(naive.value.detail) == ["starts_at"]
    assert FlashSale.objects.count() == 0


def test_flash_sale_table_refuses_what_the_rules_refuse(flash_sku):
    """The CHECK constraints hold even for code that skips the service."""
    from django.db import IntegrityError, transaction

    now = timezone.now()
    good = {
        "title": "x",
        "sku": flash_sku,
        "price_fen": 100,
        "stock": 1,
        "starts_at": now,
        "ends_at": now + dt.timedelta(hours=1),
        "limit_per_customer": 1,
    }
    for bad in ({"stock": -1}, {"price_fen": 0}, {"ends_at": now}, {"limit_per_customer": 0}, {"sold": -1}):
        with pytest.raises(IntegrityError), transaction.atomic():
            FlashSale.objects.create(**{**good, **bad})
    assert FlashSale.objects.count() == 0


def test_flash_sale_schema_documents_the_list_and_the_confirm_field(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    listing = schema["paths"]["/api/v1/flash-sales"]["get"]
    assert [p["name"] for p in listing["parameters"]] == ["status"]
    assert listing["parameters"][0]["schema"]["enum"] == ["live", "upcoming", ""]  # empty: both, as omitted
    confirm = schema["paths"]["/api/v1/orders/confirm"]["post"]["requestBody"]["content"]["application/json"]
    ref = confirm["schema"]["$ref"].rsplit("/", 1)[-1]
    assert "flash_sale_id" in schema["components"]["schemas"][ref]["properties"]
    assert "limit_exceeded" in schema["paths"]["/api/v1/orders/confirm"]["post"]["responses"]["409"]["description"]


def test_seed_demo_makes_a_live_and_an_upcoming_flash_sale(client):
    from django.core.management import call_command

    call_command("seed_demo", stdout=open("/dev/null", "w"))
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # again: nothing more
    live = client.get("/api/v1/flash-sales?status=live").json()
    upcoming = client.get("/api/v1/flash-sales?status=upcoming").json()
    assert [(s["sku_id"], s["price_fen"], s["original_price_fen"], s["stock"]) for s in live] == [(1, 6800, 12800, 10)]
    assert [(s["sku_id"], s["price_fen"], s["limit_per_customer"]) for s in upcoming] == [(7, 16800, 1)]
