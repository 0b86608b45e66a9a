"""The per-staff throttle of pickup verification (API.md "Corrections"): at most
``PICKUP_VERIFY_FAILURES_PER_HOUR`` wrong codes per staff login and Shanghai clock hour; past it
every check is refused with VerifyThrottled (a right code too) until the next hour, and the managers
get one alert for the login's hour. A check takes a place in :class:`PickupVerifyHour` before it
looks the code up (:func:`check`); a wrong code keeps it and is logged (:class:`PickupVerifyFailure`,
masked), any other outcome gives it back: however many checks run at once, no more than the cap look
codes up in an hour. Counted by PostgreSQL, not Redis: it survives restarts and cache evictions
(which would lift the throttle) and sits beside the audit rows managers read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from apps.alerts.models import Alert
from apps.alerts.services import alert_raise
from apps.orders.models import pickup_code_masked
from apps.stores.exceptions import VerifyThrottled
from apps.stores.models import PickupVerifyFailure, PickupVerifyHour, Store

HOUR = dt.timedelta(hours=1)


@dataclass
class Check:
    """One check's place in its login's hour; :meth:`wrong` keeps it."""

    user: object
    hour: dt.datetime
    now: dt.datetime
    kept: bool = False

    def wrong(self, *, code: str, store_id: int | None, reason: str) -> None:
        """The code was wrong for this login (``reason``: a PickupVerifyFailure.Reason): keep
        the place, log the try (the code masked) and, once the hour holds the cap of them,
        raise the hour's alert (one per login and hour: ``alert_raise``'s key)."""
        self.kept = True
        PickupVerifyFailure.objects.create(
            user_id=self.user.pk, store_id=store_id, code=pickup_code_masked(code), reason=reason, created_at=self.now
        )
        tries = PickupVerifyFailure.objects.filter(
            user_id=self.user.pk, created_at__gte=self.hour, created_at__lt=self.hour + HOUR
        )
        if tries.count() >= settings.PICKUP_VERIFY_FAILURES_PER_HOUR:
            _alert(self.user, store_id, self.hour, [t.code for t in tries.order_by("-id")[:5]])


@contextmanager
def check(*, user, now: dt.datetime) -> Iterator[Check]:
    """Take a place in ``user``'s hour of ``now`` for one check, give it back when the block
    ends unless :meth:`Check.wrong` kept it. Raises VerifyThrottled (the hour's cap is taken)."""
    hour = timezone.localtime(now).replace(minute=0, second=0, microsecond=0)
    PickupVerifyHour.objects.get_or_create(user_id=user.pk, hour=hour)
    places = PickupVerifyHour.objects.filter(user_id=user.pk, hour=hour)
    # One conditional UPDATE, its row count deciding. A process that dies between take and give-back
    # keeps its place until the hour ends (erring towards refusing).
    if places.filter(tries__lt=settings.PICKUP_VERIFY_FAILURES_PER_HOUR).update(tries=F("tries") + 1) != 1:
        raise VerifyThrottled(
            f"核销码输错次数过多（每小时最多 {settings.PICKUP_VERIFY_FAILURES_PER_HOUR} 次），"
            f"请于 {hour + HOUR:%H:%M} 后再试，或联系店长。",
            retry_at=f"{hour + HOUR:%Y-%m-%d %H:%M}",
        )
    taken = Check(user=user, hour=hour, now=now)
    try:
        yield taken
    finally:
        if not taken.kept:
            places.filter(tries__gt=0).update(tries=F("tries") - 1)


def _alert(user, store_id: int | None, hour: dt.datetime, codes: list[str]) -> None:
    """The managers' alert: the login, its store, the hour, the latest wrong codes (masked)."""
    name = user.get_username()
    store = Store.objects.filter(pk=store_id).values_list("name", flat=True).first() or "未绑定门店"
    cap = settings.PICKUP_VERIFY_FAILURES_PER_HOUR
    alert_raise(
        key=f"pickup:verify_failures:{user.pk}:{hour:%Y%m%d%H}",
        kind=Alert.Kind.PICKUP_VERIFY_FAILURES,
        title=f"核销码输错过多：{name}（{store}）",
        text=(
            f"员工 {name}（{store}）在 {hour:%Y-%m-%d %H}:00 起的一小时内输错核销码 {cap} 次，"
            f"核销已暂停至 {hour + HOUR:%H:%M}。最近输错的码：{'、'.join(codes)}。"
            "详见后台「门店自提 › 核销码错误记录」。"
        ),
    )
