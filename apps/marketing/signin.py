"""Daily sign-in (签到): points per Shanghai calendar day, with a streak bonus.

The table is ``SignInRule`` (staff edit it in the admin): day ``d`` of a streak of consecutive
Shanghai days earns the points of rule ``d``, cycling after the last rule day
(:func:`sign_in_points`); missing a day starts the streak at 1. Once per day is the UNIQUE
(customer, date) row, inserted in a savepoint: an IntegrityError means "already signed in today"
(also for two requests at the same moment). The points go to the ledger (``WalletEvent`` reason
``sign_in``, 签到) in the same transaction.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.models import WalletEvent
from apps.marketing.models import SignIn, SignInRule


@dataclass(frozen=True)
class SignInResult:
    date: dt.date  # Shanghai calendar day
    points: int  # points this day's sign-in earned
    streak: int  # consecutive days including this one
    already: bool  # signed in before today: nothing credited now


def sign_in_rule_save(*, rule: SignInRule, changed: list[str] | None = None) -> SignInRule:
    """Staff add a rule (``changed`` None) or change the ``changed`` columns of one (admin).
    Points already credited stay as they were; the table applies to the next sign-ins."""
    if changed is None or rule.pk is None:
        rule.save()
    elif changed:
        rule.save(update_fields=changed)
    return rule


def sign_in_points(streak: int, rules: dict[int, int] | None = None) -> int:
    """Points for streak day ``streak`` (>= 1) under ``rules`` ({day: points}; default: the
    table in the database). With rules for days 1..N the streak cycles: day N+1 earns day 1's
    points again (``((streak - 1) % N) + 1``), so a 7-day table is a weekly round. A day without
    a rule (a gap) earns the highest rule day below it; no rules at all: 0 points (the sign-in
    is still recorded)."""
    if rules is None:
        rules = dict(SignInRule.objects.values_list("day", "points"))
    if not rules:
        return 0
    cycle = max(rules)
    day = (streak - 1) % cycle + 1
    while day not in rules and day > 1:
        day -= 1
    return rules.get(day, 0)


def sign_in(*, customer_id: int, now: dt.datetime | None = None) -> SignInResult:
    """``POST /me/sign-in``: sign the customer in for today (Shanghai); once per day.

    A second call the same day returns that day's row with ``already=True`` and credits
    nothing. Points are credited with a ledger row ``(points, sign_in, "<date>/<customer>")``.
    """
    today = timezone.localtime(now or timezone.now()).date()
    existing = SignIn.objects.filter(customer_id=customer_id, date=today).first()
    if existing is not None:
        return SignInResult(date=today, points=existing.points, streak=existing.streak, already=True)
    yesterday = SignIn.objects.filter(customer_id=customer_id, date=today - dt.timedelta(days=1)).first()
    streak = yesterday.streak + 1 if yesterday else 1
    points = sign_in_points(streak)
    try:
        with transaction.atomic():
            SignIn.objects.create(customer_id=customer_id, date=today, streak=streak, points=points)
            wallet.points_reward(
                customer_id=customer_id,
                points=points,
                reason=WalletEvent.Reason.SIGN_IN,
                ref=f"{today.isoformat()}/{customer_id}",
            )
    except IntegrityError:  # signed in by a request racing this one
        row = SignIn.objects.get(customer_id=customer_id, date=today)
        return SignInResult(date=today, points=row.points, streak=row.streak, already=True)
    return SignInResult(date=today, points=points, streak=streak, already=False)
