"""What a member pays at confirm: the level discount or the SVIP member price, per line.

Orders asks this at confirm (``apps.orders.confirm``) for goods lines at their own price (never a
秒杀, 拼团, 砍价 or points-mall line; their express freight is free while SVIP all the same:
:func:`member_freight_fen`). Per line the customer gets the LOWER of two, never both
(:func:`line_price`): the SKU's ``member_price_fen`` while a paid member (SVIP), which becomes the
line's price; or their level's ``discount_percent`` of the line's amount, the price staying and the
discount (fen, rounded down) being the line's ``member_fen``. Equal costs keep the SKU's own price.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.db.models import BooleanField, IntegerField
from django.db.models.expressions import RawSQL
from django.utils import timezone

from apps.members import selectors
from apps.members.models import Level, Membership


@dataclass(frozen=True)
class MemberTerms:
    """A customer's member terms at one moment."""

    discount_percent: int  # their level's; 100 = no discount
    svip: bool  # a paid member: member prices, free express freight, double points

    @property
    def any(self) -> bool:
        """True when the terms change any price."""
        return self.svip or self.discount_percent < 100


@dataclass(frozen=True)
class LinePrice:
    """One line as a member pays it: ``price_fen`` per unit (fen) and the level discount on
    the whole line ``member_fen`` (fen; 0 when the member price won)."""

    price_fen: int
    member_fen: int


def member_terms(*, customer_id: int, now: dt.datetime | None = None) -> MemberTerms:
    """The customer's level discount and SVIP state at ``now`` (two small reads)."""
    return member_terms_many([customer_id], now=now)[customer_id]


def member_terms_many(customer_ids: list[int], *, now: dt.datetime | None = None) -> dict[int, MemberTerms]:
    """:func:`member_terms` of each customer, ``{customer_id: MemberTerms}``: two reads in all."""
    now = now or timezone.now()
    rows = Membership.objects.filter(customer_id__in=customer_ids).values_list(
        "customer_id", "growth", "svip_expires_at"
    )
    held = {customer_id: (growth, expires) for customer_id, growth, expires in rows}
    all_levels = selectors.levels()
    terms = {}
    for customer_id in customer_ids:
        growth, expires = held.get(customer_id, (0, None))
        level = selectors.level_for(growth, all_levels)
        terms[customer_id] = MemberTerms(
            discount_percent=level.discount_percent if level else 100,
            svip=expires is not None and expires > now,
        )
    return terms


def terms_annotations(*, customer_id: int, now: dt.datetime | None = None) -> dict:
    """``queryset.annotate(**terms_annotations(...))``: every row carries the customer's member
    terms (``member_discount_percent``, ``member_svip``), read by :func:`terms_of`. Confirm adds
    them to its one SKU query, so the terms cost it no query of its own (its query budget:
    ``tests/orders/test_hot_path.py``); same rule as :func:`member_terms`. Two fixed SQL
    subqueries (``RawSQL``): the ORM's ``Subquery``/``Exists`` cost confirm 1.5 ms of CPU to compile."""
    now = now or timezone.now()
    membership, level = Membership._meta.db_table, Level._meta.db_table
    growth = f"COALESCE((SELECT m.growth FROM {membership} m WHERE m.customer_id = %s), 0)"
    return {
        "member_discount_percent": RawSQL(
            f"COALESCE((SELECT l.discount_percent FROM {level} l WHERE l.growth_min <= {growth}"
            " ORDER BY l.growth_min DESC LIMIT 1), 100)",
            [customer_id],
            output_field=IntegerField(),
        ),
        "member_svip": RawSQL(
            f"EXISTS (SELECT 1 FROM {membership} m WHERE m.customer_id = %s AND m.svip_expires_at > %s)",
            [customer_id, connection.ops.adapt_datetimefield_value(now)],
            output_field=BooleanField(),
        ),
    }


def terms_of(row) -> MemberTerms:
    """The terms a row annotated by :func:`terms_annotations` carries."""
    return MemberTerms(discount_percent=row.member_discount_percent, svip=bool(row.member_svip))


def member_freight_fen(freight_fen: int, *, svip: bool) -> int:
    """The express freight (fen) a customer pays for goods: none while SVIP (API.md Members),
    on every goods order, 秒杀, 拼团 and 砍价 included. Django's confirm and the 秒杀 gate
    (``starmall.gates.flash_confirm``) both ask it."""
    return 0 if svip else freight_fen


def svip_at_ms(expires_ms: int, now: dt.datetime) -> bool:
    """SVIP at ``now`` for an expiry in epoch milliseconds (0: none), as :func:`member_terms`."""
    return expires_ms > int(now.timestamp() * 1000)


def level_discount_fen(amount_fen: int, discount_percent: int) -> int:
    """What ``discount_percent`` (95 = 5 % off) takes off ``amount_fen``, fen, rounded down."""
    return amount_fen * (100 - discount_percent) // 100


def line_price(*, price_fen: int, member_price_fen: int | None, quantity: int, terms: MemberTerms) -> LinePrice:
    """The line of ``quantity`` units of a SKU at ``price_fen`` (its member price
    ``member_price_fen`` or None) for a customer with ``terms``: the lower of the member price
    and the level discount, never both; equal costs keep ``price_fen`` (module docstring)."""
    amount = price_fen * quantity
    discount = level_discount_fen(amount, terms.discount_percent)
    if terms.svip and member_price_fen is not None and member_price_fen * quantity < amount - discount:
        return LinePrice(price_fen=member_price_fen, member_fen=0)
    return LinePrice(price_fen=price_fen, member_fen=discount)
