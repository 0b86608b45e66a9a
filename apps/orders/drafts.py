"""Order drafts (phase 1 of the two-phase order) kept in Redis under their ``order_key``.

A draft is the priced cart the customer saw at confirm. It lives ``ORDER_DRAFT_TTL_SECONDS``
and is deleted after the order that consumed it commits (never before: a failed create leaves
it, so the customer can retry the same key).
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core.cache import cache


def _key(order_key: str) -> str:
    return f"order:draft:{order_key}"


def draft_new_key() -> str:
    """A fresh, unguessable order_key (32 hex characters)."""
    return secrets.token_hex(16)


def draft_save(order_key: str, draft: dict) -> None:
    """Store the draft (JSON-serialisable dict) for ``ORDER_DRAFT_TTL_SECONDS``."""
    cache.set(_key(order_key), draft, timeout=settings.ORDER_DRAFT_TTL_SECONDS)


def draft_get(order_key: str) -> dict | None:
    """The draft, or None when it expired or never existed."""
    return cache.get(_key(order_key))


def draft_delete(order_key: str) -> None:
    """Drop the draft (after the order made from it committed)."""
    cache.delete(_key(order_key))
