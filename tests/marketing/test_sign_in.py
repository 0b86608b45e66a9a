"""Daily sign-in (签到): once per Shanghai day (UNIQUE row), streak points from the rule table
(cycling), credited to the points ledger in the same transaction."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from apps.accounts.models import Customer, WalletEvent
from apps.marketing import signin
from apps.marketing.models import SignIn, SignInRule

pytestmark = pytest.mark.django_db

SHANGHAI = ZoneInfo("Asia/Shanghai")


@pytest.fixture
def rules(db):
    for day, points in enumerate([5, 5, 10, 10, 15, 15, 30], start=1):
        SignInRule.objects.create(day=day, points=points)


def at(day: int, hour: int = 9) -> dt.datetime:
    return dt.datetime(2026, 12, day, hour, tzinfo=SHANGHAI)


def test_sign_in_once_a_day_through_the_api(api, customer, rules):
    first = api.post("/api/v1/me/sign-in")
    assert first.status_code == 200
    body = first.json()
    assert (body["points"], body["streak"], body["already"]) == (5, 1, False)
    again = api.post("/api/v1/me/sign-in").json()
    assert (again["date"], again["points"], again["streak"], again["already"]) == (body["date"], 5, 1, True)
    assert Customer.objects.get(pk=customer.pk).points == 5
    ledger = api.get("/api/v1/me/points").json()
    assert ledger["points"] == 5
    assert [(r["change"], r["reason"], r["reason_text"], r["order_no"]) for r in ledger["results"]] == [
        (5, "sign_in", "签到", "")
    ]


def test_streak_grows_cycles_and_breaks(customer, rules):
    got = [signin.sign_in(customer_id=customer.pk, now=at(d)) for d in range(1, 10)]  # 1..9 December
    assert [(r.streak, r.points) for r in got] == [
        (1, 5),
        (2, 5),
        (3, 10),
        (4, 10),
        (5, 15),
        (6, 15),
        (7, 30),
        (8, 5),
        (9, 5),
    ]
    missed = signin.sign_in(customer_id=customer.pk, now=at(11))  # the 10th was missed
    assert (missed.streak, missed.points, missed.already) == (1, 5, False)
    total = sum(r.points for r in got) + missed.points
    assert Customer.objects.get(pk=customer.pk).points == total == 105
    assert WalletEvent.objects.filter(customer=customer, reason="sign_in").count() == 10


def test_days_are_shanghai_days(customer, rules):
    late = signin.sign_in(customer_id=customer.pk, now=at(1, 23))
    # 00:30 Shanghai on the 2nd is still the 1st in UTC: a new day here
    early = signin.sign_in(customer_id=customer.pk, now=dt.datetime(2026, 12, 2, 0, 30, tzinfo=SHANGHAI))
    assert (late.date, early.date) == (dt.date(2026, 12, 1), dt.date(2026, 12, 2))
    assert (early.streak, early.already) == (2, False)
    same = signin.sign_in(customer_id=customer.pk, now=dt.datetime(2026, 12, 2, 23, 59, tzinfo=SHANGHAI))
    assert same.already and SignIn.objects.filter(customer=customer).count() == 2


def test_points_rule_table_gaps_and_empty():
    assert signin.sign_in_points(1, {}) == 0
    assert signin.sign_in_points(3, {1: 5, 2: 8, 5: 20}) == 8  # no rule for day 3: day 2's
    assert signin.sign_in_points(6, {1: 5, 2: 8, 5: 20}) == 5  # cycle of 5: day 1 again


def test_no_rules_still_records_the_day(customer):
    result = signin.sign_in(customer_id=customer.pk, now=at(1))
    assert (result.points, result.streak, result.already) == (0, 1, False)
    assert SignIn.objects.filter(customer=customer).count() == 1
    assert WalletEvent.objects.filter(customer=customer).count() == 0
