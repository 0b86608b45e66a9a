"""``manage.py flash_sale_create`` schedules a 秒杀 through the admin's service: the same rules,
the same permission for ``--by``, one line starting with the new sale's id."""

import datetime as dt
from io import StringIO

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.marketing.models import FlashSale

pytestmark = pytest.mark.django_db


def _run(sku, **overrides) -> str:
    starts = (timezone.localtime() + dt.timedelta(hours=1)).replace(microsecond=0)
    args = {
        "--sku": sku.pk,
        "--price-fen": 6600,
        "--stock": 4,
        "--limit": 2,
        "--starts-at": starts.isoformat(),
        "--ends-at": (starts + dt.timedelta(hours=2)).isoformat(),
        "--title": "脚本秒杀",
        **overrides,
    }
    out = StringIO()
    call_command("flash_sale_create", *[str(p) for kv in args.items() for p in kv], stdout=out)
    return out.getvalue()


def test_creates_the_sale_and_prints_its_id_first(make_sku):
    sku = make_sku(price_fen=12800, stock=10)
    line = _run(sku)
    sale = FlashSale.objects.get()
    assert line.splitlines()[0].split()[0] == str(sale.pk)
    assert len(line.splitlines()) == 1
    assert (sale.sku_id, sale.price_fen, sale.stock, sale.limit_per_customer, sale.title) == (
        sku.pk,
        6600,
        4,
        2,
        "脚本秒杀",
    )
    assert sale.ends_at - sale.starts_at == dt.timedelta(hours=2)
    sku.refresh_from_db()
    assert sku.stock == 10  # a sale reserves nothing: the SKU's units move only at create


def test_a_naive_time_is_beijing_time(make_sku):
    sku = make_sku()
    _run(sku, **{"--starts-at": "2099-01-01T10:00:00", "--ends-at": "2099-01-01T12:00:00"})
    sale = FlashSale.objects.get()
    assert timezone.localtime(sale.starts_at).isoformat() == "2099-01-01T10:00:00+08:00"
    assert sale.starts_at == dt.datetime(2099, 1, 1, 2, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"--price-fen": 99999}, "price_fen"),  # above the SKU's price
        ({"--stock": 11}, "stock"),  # more than the SKU holds
        ({"--limit": 0}, "limit_per_customer"),
        ({"--ends-at": "2020-01-01T00:00:00+08:00"}, "ends_at"),
        ({"--starts-at": "tomorrow"}, "--starts-at must be an ISO 8601 time"),
    ],
)
def test_refusals_are_the_admins_rules_and_create_nothing(make_sku, overrides, words):
    sku = make_sku(price_fen=12800, stock=10)
    with pytest.raises(CommandError, match="refused|ISO 8601") as refused:
        _run(sku, **overrides)
    assert words in str(refused.value)
    assert FlashSale.objects.count() == 0


def test_by_needs_the_admins_permission(make_sku, django_user_model):
    sku = make_sku()
    clerk = django_user_model.objects.create_user("clerk", password="pw-123456", is_staff=True)
    with pytest.raises(CommandError, match="lacks marketing.manage_flashsale"):
        _run(sku, **{"--by": "clerk"})
    assert FlashSale.objects.count() == 0
    clerk.user_permissions.add(Permission.objects.get(codename="manage_flashsale"))
    assert _run(sku, **{"--by": "clerk"}).startswith(str(FlashSale.objects.get().pk) + " ")
    with pytest.raises(CommandError, match="no active staff user 'nobody'"):
        _run(sku, **{"--by": "nobody"})
