"""API tokens: random, kept in Redis (shared by every web process), revocable at once.

Redis stores only the SHA-256 of a token, so a copy of Redis does not hand out logins. Each
customer's token keys are also listed in a set, so that deactivating the customer revokes every
token at once (:func:`tokens_revoke_customer`, driven by ``apps.accounts.revocations`` until
Redis confirms): a token in Redis then belongs to an active customer, give or take beat's sweep
interval, which is what the sold-out gate in front of Django relies on
(``starmall.gates.orders``). Authentication still checks ``is_active`` in the database.
"""

import hashlib
import secrets
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache

from starmall import cache_client

_TOKEN_PREFIX = "auth:token:"


def token_key(token: str) -> str:
    """The cache key of a token (before the cache's KEY_PREFIX): ``auth:token:<sha256 hex>``."""
    return _TOKEN_PREFIX + hashlib.sha256(token.encode()).hexdigest()


def _customer_tokens_key(customer_id: int) -> str:
    return cache.make_key(f"auth:customer:{customer_id}:tokens")


def token_issue(*, customer_id: int) -> str:
    """A new bearer token for the customer, valid ``AUTH_TOKEN_TTL_SECONDS``.

    The token (its hash, the value being the customer id as django-redis stores an int) and its
    place in the customer's set are written in one MULTI; Redis errors propagate.
    """
    token = secrets.token_urlsafe(32)
    ttl = settings.AUTH_TOKEN_TTL_SECONDS
    key = cache.make_key(token_key(token))
    pipe = cache_client.redis_client().pipeline(transaction=True)
    pipe.set(key, customer_id, ex=ttl)
    _list(pipe, customer_id, [key])
    pipe.execute()
    return token


def _list(pipe, customer_id: int, keys: list) -> None:
    """Queue on ``pipe``: add the token ``keys`` (full cache keys) to the customer's set, which
    lives as long as its newest token."""
    listed = _customer_tokens_key(customer_id)
    pipe.sadd(listed, *keys)
    pipe.expire(listed, settings.AUTH_TOKEN_TTL_SECONDS)


def token_customer_id(token: str) -> int | None:
    """The customer id a token belongs to, or None when unknown, expired or revoked."""
    return cache.get(token_key(token))


def token_revoke(token: str) -> None:
    """Make the token stop working at once (its entry in the customer's set expires with it)."""
    cache.delete(token_key(token))


def tokens_revoke_customer(customer_id: int) -> int:
    """Revoke every token issued to the customer (staff deactivated them); the number revoked.

    Tokens issued before the per-customer set existed are not listed and run out with their
    TTL; authentication refuses them anyway (it checks ``is_active``). Redis errors propagate.
    """
    conn = cache_client.redis_client()
    listed = _customer_tokens_key(customer_id)
    keys = list(conn.smembers(listed))
    revoked = conn.delete(*keys) if keys else 0
    conn.delete(listed)
    return revoked


def tokens_listed(customer_ids: list[int]) -> list[int]:
    """Those of ``customer_ids`` that have a token set in Redis, in the order given. One
    ``EXISTS`` of all their keys answers the usual "none" (an inactive customer's set is gone
    once revoked or expired); only when it counts some, one pipelined EXISTS per id says whose.
    Redis errors propagate."""
    conn = cache_client.redis_client()
    keys = [_customer_tokens_key(customer_id) for customer_id in customer_ids]
    if not keys or not conn.exists(*keys):
        return []
    pipe = conn.pipeline(transaction=False)
    for key in keys:
        pipe.exists(key)
    return [customer_id for customer_id, found in zip(customer_ids, pipe.execute(), strict=True) if found]


def tokens_list_unlisted(active: Callable[[set[int]], set[int]]) -> None:
    """One-off (migration ``accounts.0008``): put every token in Redis into its customer's set,
    and drop those whose customer ``active`` (customer ids -> the active ones among them) does
    not return. Scans the cache's token keys once; Redis errors propagate."""
    conn = cache_client.redis_client()
    owners: dict[int, list[bytes]] = {}
    for key in conn.scan_iter(match=cache.make_key(_TOKEN_PREFIX + "*"), count=1000):
        value = conn.get(key)
        if value is not None and value.isdigit():
            owners.setdefault(int(value), []).append(key)
    kept = active(set(owners))
    pipe = conn.pipeline(transaction=False)
    for customer_id, keys in owners.items():
        if customer_id in kept:
            _list(pipe, customer_id, keys)
        else:
            pipe.delete(*keys)
    pipe.execute()
