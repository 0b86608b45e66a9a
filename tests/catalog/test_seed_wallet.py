"""The demo customer's balance and points are ledger rows from the first start: seed_demo
credits them through the wallet services, once however often it runs."""

import io

import pytest
from django.core.management import call_command
from django.db.models import Sum

from apps.accounts.models import Customer, WalletEvent

pytestmark = pytest.mark.django_db


def _ledger_sums(customer: Customer) -> tuple[int, int]:
    rows = WalletEvent.objects.filter(customer=customer, state=WalletEvent.State.AVAILABLE)
    balance = rows.filter(kind=WalletEvent.Kind.BALANCE).aggregate(s=Sum("amount"))["s"] or 0
    points = rows.filter(kind=WalletEvent.Kind.POINTS).aggregate(s=Sum("amount"))["s"] or 0
    return balance, points


def test_seed_demo_wallet_equals_its_ledger_and_is_credited_once(make_api):
    call_command("seed_demo", stdout=io.StringIO())
    call_command("seed_demo", stdout=io.StringIO())  # make run again: nothing more
    customers = list(Customer.objects.order_by("pk"))
    assert len(customers) == 3  # the demo customer and the two teachers
    for customer in customers:
        assert (customer.balance_fen, customer.points) == _ledger_sums(customer), customer.openid
    demo = Customer.objects.get(openid="oDemoCustomer0000000000000001")
    assert (demo.balance_fen, demo.points) == (100000, 500)
    assert list(WalletEvent.objects.filter(customer=demo).order_by("kind").values_list("kind", "reason", "amount")) == [
        ("balance", "adjust", 100000),
        ("points", "adjust", 500),
    ]
    # What the customer sees: the two rows behind the numbers.
    api = make_api(demo)
    assert api.get("/api/v1/me").json()["balance_fen"] == 100000
    balance, points = api.get("/api/v1/me/balance").json(), api.get("/api/v1/me/points").json()
    assert balance["balance_fen"] == 100000 and [row["change_fen"] for row in balance["results"]] == [100000]
    assert points["points"] == 500 and [row["change"] for row in points["results"]] == [500]


def test_seed_demo_wallet_credit_again_credits_nothing(make_api):
    from apps.catalog.management.commands.seed_demo import demo_wallet_credit

    call_command("seed_demo", stdout=io.StringIO())
    demo_wallet_credit()  # the UNIQUE ledger keys: a second credit is a no-op
    demo = Customer.objects.get(openid="oDemoCustomer0000000000000001")
    assert (demo.balance_fen, demo.points) == (100000, 500) == _ledger_sums(demo)
