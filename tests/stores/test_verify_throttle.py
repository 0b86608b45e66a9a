"""Wrong pickup codes are throttled per staff login (PICKUP_VERIFY_FAILURES_PER_HOUR a Shanghai
clock hour): past the cap every code is refused, the right one too, for the page, the service
and the command; another login is unaffected; the managers get one alert; each wrong code is
logged masked."""

import datetime as dt

import pytest
from django.core.cache import cache
from django.core.management import base as management_base
from django.urls import reverse
from django.utils import timezone

from apps.alerts.models import Alert
from apps.orders.models import Order, OrderStatus
from apps.stores import services
from apps.stores.exceptions import Forbidden, VerifyThrottled
from apps.stores.management.commands.pickup_verify import Command
from apps.stores.models import PickupVerifyFailure, PickupVerifyHour, Store
from starmall.errors import NotFound

pytestmark = pytest.mark.django_db
CAP = 20


@pytest.fixture(autouse=True)
def one_clock_hour(monkeypatch):
    """Keep each test inside one Shanghai clock hour: the cap is per clock hour, so a test that
    began at hh:59:59 would find the count reset half-way. The clock still runs, started at
    most at minute 50 of the current hour."""
    real_now = timezone.now
    started = real_now()
    minute = timezone.localtime(started).minute
    base = started - dt.timedelta(minutes=max(0, minute - 50))
    monkeypatch.setattr(timezone, "now", lambda: base + (real_now() - started))


def wrong_codes(order: Order, n: int) -> list[str]:
    """``n`` 8-digit codes no pickup order has (the order's code plus 1..n, wrapped)."""
    return [f"{(int(order.pickup_code) + i) % 10**8:08d}" for i in range(1, n + 1)]


def _tries(user) -> int:
    return sum(PickupVerifyHour.objects.filter(user=user).values_list("tries", flat=True))


def test_twenty_wrong_codes_then_even_the_right_one_is_refused_per_login(paid_pickup, make_staff, store, settings):
    settings.PICKUP_VERIFY_FAILURES_PER_HOUR = CAP
    order = paid_pickup()
    clerk, other = make_staff("clerk", store), make_staff("clerk2", store)
    for code in wrong_codes(order, CAP):
        with pytest.raises(NotFound):
            services.pickup_verify(code=code, user=clerk)
    assert _tries(clerk) == CAP and PickupVerifyFailure.objects.filter(user=clerk).count() == CAP
    cache.clear()  # the count is in the database, not the cache: a restart or a flushed Redis keeps it
    with pytest.raises(VerifyThrottled) as refused:
        services.pickup_verify(code=order.pickup_code, user=clerk)  # the 21st: the right code
    assert refused.value.code == "throttled" and refused.value.status == 429
    assert "核销码输错次数过多" in refused.value.message and "每小时最多 20 次" in refused.value.message
    with pytest.raises(VerifyThrottled):
        services.pickup_verify(code=wrong_codes(order, 1)[0], user=clerk)
    assert Order.objects.get(pk=order.pk).status == OrderStatus.PAID
    assert _tries(clerk) == CAP and PickupVerifyFailure.objects.filter(user=clerk).count() == CAP

    assert services.pickup_verify(code=order.pickup_code, user=other).status == OrderStatus.COMPLETED
    assert _tries(other) == 0  # a right code gives its place back


def test_the_next_hour_opens_again(paid_pickup, make_staff, store, settings):
    settings.PICKUP_VERIFY_FAILURES_PER_HOUR = 3
    order = paid_pickup()
    clerk = make_staff("clerk", store)
    now = timezone.localtime().replace(minute=30)
    for code in wrong_codes(order, 3):
        with pytest.raises(NotFound):
            services.pickup_verify(code=code, user=clerk, now=now)
    with pytest.raises(VerifyThrottled) as refused:
        services.pickup_verify(code=order.pickup_code, user=clerk, now=now + dt.timedelta(minutes=29))
    assert f"请于 {now + dt.timedelta(minutes=30):%H}:00 后再试" in refused.value.message
    later = now + dt.timedelta(minutes=30)  # the next clock hour
    assert services.pickup_verify(code=order.pickup_code, user=clerk, now=later).status == OrderStatus.COMPLETED


def test_right_codes_and_refusals_that_are_not_wrong_codes_do_not_count(paid_pickup, make_staff, store, settings):
    settings.PICKUP_VERIFY_FAILURES_PER_HOUR = 2
    first, second = paid_pickup(), paid_pickup()
    clerk = make_staff("clerk", store)
    with pytest.raises(NotFound):
        services.pickup_verify(code=wrong_codes(first, 1)[0], user=clerk)
    services.pickup_verify(code=first.pickup_code, user=clerk)
    for _ in range(3):  # verified before: a right code at the wrong moment, not a guess
        with pytest.raises(services.AlreadyVerified):
            services.pickup_verify(code=first.pickup_code, user=clerk)
    assert _tries(clerk) == 1
    elsewhere = Store.objects.create(name="别店", address="x", lat=0, lng=0)
    with pytest.raises(Forbidden):  # another store's code counts as wrong for this login
        services.pickup_verify(code=paid_pickup(at=elsewhere).pickup_code, user=clerk)
    assert list(PickupVerifyFailure.objects.order_by("id").values_list("reason", flat=True)) == [
        "not_found",
        "other_store",
    ]
    with pytest.raises(VerifyThrottled):
        services.pickup_verify(code=second.pickup_code, user=clerk)


def test_failures_are_logged_masked_and_one_alert_is_raised(paid_pickup, make_staff, store, settings):
    settings.PICKUP_VERIFY_FAILURES_PER_HOUR = CAP
    order = paid_pickup()
    clerk = make_staff("clerk", store)
    codes = wrong_codes(order, CAP)
    for code in codes[:-1]:
        with pytest.raises(NotFound):
            services.pickup_verify(code=code, user=clerk)
    assert Alert.objects.count() == 0  # 19 wrong: no alert yet
    with pytest.raises(NotFound):
        services.pickup_verify(code=codes[-1], user=clerk)
    for _ in range(5):
        with pytest.raises(VerifyThrottled):
            services.pickup_verify(code=codes[0], user=clerk)
    alert = Alert.objects.get()
    assert alert.kind == Alert.Kind.PICKUP_VERIFY_FAILURES and "clerk" in alert.title and "西湖店" in alert.title
    assert f"****{codes[-1][-4:]}" in alert.text and not any(code in alert.text for code in codes)
    logged = list(PickupVerifyFailure.objects.order_by("id"))
    assert [f.code for f in logged] == [f"****{code[-4:]}" for code in codes]
    assert {(f.user_id, f.store_id, f.reason) for f in logged} == {(clerk.pk, store.pk, "not_found")}


def test_the_page_refuses_past_the_cap_with_the_message(client, paid_pickup, make_staff, store, settings):
    settings.PICKUP_VERIFY_FAILURES_PER_HOUR = 2
    order = paid_pickup()
    make_staff("clerk", store)
    client.login(username="clerk", password="pw-clerk")
    url = reverse("admin:stores_pickup_verify")
    for code in wrong_codes(order, 2):
        assert "核销码不存在" in client.post(url, {"code": code}, follow=True).content.decode()
    page = client.post(url, {"code": order.pickup_code}, follow=True).content.decode()
    assert "未核销：核销码输错次数过多" in page and "核销成功" not in page
    assert Order.objects.get(pk=order.pk).status == OrderStatus.PAID


def test_the_command_refuses_past_the_cap_with_one_line_and_exit_1(
    paid_pickup, make_staff, store, settings, capsys, monkeypatch
):
    settings.PICKUP_VERIFY_FAILURES_PER_HOUR = 2
    order = paid_pickup()
    make_staff("clerk", store)
    # run_from_argv closes every connection when done: keep the test's transaction open
    monkeypatch.setattr(management_base.connections, "close_all", lambda: None)

    def run(code: str) -> int:
        with pytest.raises(SystemExit) as exited:
            Command().run_from_argv(["manage.py", "pickup_verify", code, "--by", "clerk"])
        return exited.value.code

    assert [run(code) for code in wrong_codes(order, 2)] == [1, 1]
    capsys.readouterr()
    assert run(order.pickup_code) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("CommandError: 核销码输错次数过多"), lines
    assert Order.objects.get(pk=order.pk).status == OrderStatus.PAID
