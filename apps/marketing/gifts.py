"""Coupons the shop gives by itself (API.md "Members": new-customer coupons; birthday coupons).

* ``new_customer`` templates: every active one at the first login (:func:`new_customer_gifts_give`),
  once per customer by UNIQUE (template, customer, year 0).
* ``birthday`` templates: every active one, daily by beat (:func:`birthday_gifts_give`), to active
  customers whose birthday (``Customer.birthday``, set with PATCH /me) is today in Shanghai
  (29 February: on 28 February in other years), once a year by UNIQUE (template, customer, year).
Each gift is one transaction (:func:`gift_give`): the UNIQUE gift row first (a repeat or racing
run gives nothing), then ``coupons.coupon_grant`` (none left: nothing written, tried next run).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import Customer
from apps.marketing import coupons
from apps.marketing.models import CouponGift, CouponTemplate

logger = logging.getLogger(__name__)

NEW_CUSTOMER_YEAR = 0  # CouponGift.year of a new-customer gift


def _templates(occasion: str, now: dt.datetime) -> list[CouponTemplate]:
    return list(
        CouponTemplate.objects.filter(Q(valid_to__isnull=True) | Q(valid_to__gt=now), is_active=True, occasion=occasion)
    )


def gift_give(*, template: CouponTemplate, customer_id: int, year: int, now: dt.datetime | None = None) -> bool:
    """Give ``template`` to the customer for ``year`` once; False when given before (or by a
    racing run) or none is left. One transaction (a savepoint inside the caller's)."""
    now = now or timezone.now()
    try:
        with transaction.atomic():
            gift = CouponGift.objects.create(template=template, customer_id=customer_id, year=year, coupon=None)
            coupon = coupons.coupon_grant(template=template, customer_id=customer_id, now=now)
            if coupon is None:
                raise _NoneLeft()
            CouponGift.objects.filter(pk=gift.pk).update(coupon=coupon)
    except IntegrityError:
        return False
    except _NoneLeft:
        logger.warning("coupon gift: template %s has none left for customer %s", template.pk, customer_id)
        return False
    return True


class _NoneLeft(Exception):
    pass


def new_customer_gifts_give(*, customer, scene: str = "", first: bool = False) -> int:
    """Login hook (``apps.accounts.login_hooks``, registered by ``MarketingConfig.ready``): on the
    first login, every active ``new_customer`` template once; returns how many were given (0 on
    later logins). It runs inside the transaction that created the customer, so of racing first
    logins only the creating one gives."""
    if not first:
        return 0
    now = timezone.now()
    return sum(
        gift_give(template=t, customer_id=customer.pk, year=NEW_CUSTOMER_YEAR, now=now)
        for t in _templates(CouponTemplate.Occasion.NEW_CUSTOMER, now)
    )


def _birthday_filter(today: dt.date) -> Q:
    """Customers whose birthday is ``today`` (29 February counts on 28 February of other years)."""
    match = Q(birthday__month=today.month, birthday__day=today.day)
    if today.month == 2 and today.day == 28:
        try:
            dt.date(today.year, 2, 29)
        except ValueError:
            match |= Q(birthday__month=2, birthday__day=29)
    return match


def birthday_gifts_give(*, now: dt.datetime | None = None) -> int:
    """Beat (daily, and safe at any hour or twice): every active ``birthday`` template to each
    active customer whose birthday is today (Shanghai), once per calendar year; returns how
    many were given."""
    now = now or timezone.now()
    today = timezone.localdate(now)
    templates = _templates(CouponTemplate.Occasion.BIRTHDAY, now)
    if not templates:
        return 0
    given = 0
    customers = Customer.objects.filter(_birthday_filter(today), is_active=True).order_by("pk")
    for customer_id in customers.values_list("pk", flat=True).iterator(chunk_size=500):
        for template in templates:
            given += gift_give(template=template, customer_id=customer_id, year=today.year, now=now)
    return given
