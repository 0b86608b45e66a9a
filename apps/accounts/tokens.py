"""API tokens: random, kept in Redis (shared by every web process), revocable at once.

Redis stores only the SHA-256 of a token, so a copy of Redis does not hand out logins.
"""

import hashlib
import secrets

from django.conf import settings
from django.core.cache import cache


def _key(token: str) -> str:
    return "auth:token:" + hashlib.sha256(token.encode()).hexdigest()


def token_issue(*, customer_id: int) -> str:
    """A new bearer token for the customer, valid ``AUTH_TOKEN_TTL_SECONDS``."""
    token = secrets.token_urlsafe(32)
    cache.set(_key(token), customer_id, timeout=settings.AUTH_TOKEN_TTL_SECONDS)
    return token


def token_customer_id(token: str) -> int | None:
    """The customer id a token belongs to, or None when unknown, expired or revoked."""
    return cache.get(_key(token))


def token_revoke(token: str) -> None:
    """Make the token stop working at once."""
    cache.delete(_key(token))
