"""Referral binding: every customer's distribution account and code, who referred whom.

A referrer is bound once (conditional UPDATE ``WHERE referrer IS NULL``): by the scene
``r=<code>`` of the mini-program code a customer opened on their FIRST login (the login hook
runs inside the transaction that creates the customer, so concurrent first logins bind once),
or later by ``POST /me/referrer``. Never oneself, never a loop (binds that could close one are
serialized by a transaction-level advisory lock on PostgreSQL), never rebound.
"""

from __future__ import annotations

import logging
import secrets

from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from apps.distribution.models import Channel, Distributor
from starmall.errors import InvalidInput, InvalidState, NotFound

logger = logging.getLogger(__name__)

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed
CODE_LENGTH = 8
MAX_CHAIN = 10_000  # a referral chain longer than this is treated as a loop (it cannot be one)
_BIND_LOCK_KEY = 0x5354_4D44  # "STMD": the advisory lock that serializes referrer binds


def _new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def distributor_for(*, customer_id: int) -> Distributor:
    """The customer's distribution account, made on first need with a fresh UNIQUE referral
    code (a colliding code is drawn again; a concurrent maker's row wins)."""
    found = Distributor.objects.filter(customer_id=customer_id).first()
    if found is not None:
        return found
    for _ in range(8):
        try:
            with transaction.atomic():
                return Distributor.objects.create(customer_id=customer_id, referral_code=_new_code())
        except IntegrityError:
            found = Distributor.objects.filter(customer_id=customer_id).first()
            if found is not None:
                return found  # made concurrently
    raise RuntimeError("could not draw a unique referral code")


def scene_parse(scene: str) -> dict[str, str]:
    """``"r=AB12CD34&p=5"`` -> ``{"r": "AB12CD34", "p": "5"}``; anything unparsable -> {}."""
    out: dict[str, str] = {}
    for part in (scene or "").strip().split("&"):
        key, sep, value = part.partition("=")
        if sep and key in ("r", "c", "p", "t") and value.isalnum() and len(value) <= 16:
            out.setdefault(key, value)
    return out


def _would_loop(*, customer_distributor_id: int, referrer: Distributor) -> bool:
    """True if ``referrer`` is the customer themself or has the customer up its chain."""
    seen = 0
    current_id: int | None = referrer.pk
    while current_id is not None and seen < MAX_CHAIN:
        if current_id == customer_distributor_id:
            return True
        current_id = Distributor.objects.filter(pk=current_id).values_list("referrer_id", flat=True).first()
        seen += 1
    return current_id is not None


def _bind_lock() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_BIND_LOCK_KEY])


@transaction.atomic
def referrer_bind(*, customer_id: int, code: str) -> Distributor:
    """Bind the customer to the owner of referral ``code``; returns the referrer's account.

    Raises NotFound (unknown code), InvalidInput (one's own code, or a referrer below the
    customer: a loop; ``detail.code``), InvalidState (already bound: never rebound).
    """
    referrer = Distributor.objects.select_related("customer").filter(referral_code=(code or "").strip().upper()).first()
    if referrer is None:
        raise NotFound("推广码不存在。")
    me = distributor_for(customer_id=customer_id)
    if referrer.pk == me.pk:
        raise InvalidInput("不能绑定自己的推广码。", code=["不能绑定自己的推广码。"])
    if me.referrer_id is not None:
        raise InvalidState("已绑定推广人，不能更改。")
    _bind_lock()  # two binds that would close a loop (A->B while B->A) wait for each other here
    if _would_loop(customer_distributor_id=me.pk, referrer=referrer):
        raise InvalidInput("不能绑定自己团队中的推广人。", code=["不能绑定自己团队中的推广人。"])
    if (
        Distributor.objects.filter(pk=me.pk, referrer__isnull=True).update(
            referrer_id=referrer.pk, bound_at=timezone.now()
        )
        != 1
    ):
        raise InvalidState("已绑定推广人，不能更改。")
    return referrer


def channel_visit(*, code: str, registration: bool = False) -> Channel | None:
    """Count a visit to channel ``code`` (and a registration): one conditional UPDATE; None
    if there is no such channel."""
    changes = {"visits": F("visits") + 1}
    if registration:
        changes["registrations"] = F("registrations") + 1
    if Channel.objects.filter(code=code).update(**changes) != 1:
        return None
    return Channel.objects.filter(code=code).first()


def login_scene(*, customer, scene: str, first: bool) -> None:
    """The login hook (registered in ``DistributionConfig.ready``): make the account; on a first
    login ``r=<code>`` binds the referrer; ``c=<code>`` counts a visit (and a registration on a
    first login). Anything else, or a code that does not fit, is ignored."""
    parsed = scene_parse(scene)
    me = distributor_for(customer_id=customer.pk)
    if first and "r" in parsed:
        referrer = Distributor.objects.filter(referral_code=parsed["r"].upper()).exclude(pk=me.pk).first()
        if referrer is not None:
            # The customer was created in this very transaction: nobody can be below them yet.
            Distributor.objects.filter(pk=me.pk, referrer__isnull=True).update(
                referrer_id=referrer.pk, bound_at=timezone.now()
            )
    if "c" in parsed:
        channel = channel_visit(code=parsed["c"], registration=first)
        if channel is not None and first:
            Distributor.objects.filter(pk=me.pk, channel__isnull=True).update(channel=channel)
