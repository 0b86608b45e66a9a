"""Article views counted in Redis, flushed into ``Article.views`` by beat.

A view is one ``HINCRBY`` on a Redis hash (article id -> views since the last flush), never a
database write: a popular article would otherwise hold its row locked all day.
:func:`article_views_flush` (beat, every ``ARTICLE_VIEWS_FLUSH_SECONDS``) renames the hash to a
flush key (atomic: exactly one flush gets the counts) and adds them with one relative ``UPDATE``
per article; a key left by a flush that died is added first, once. Safe to run twice, also
concurrently. The API shows the flushed count plus what is pending, so a reader sees their own
view at once. Redis down: the view is not counted (the article is still served).
"""

from __future__ import annotations

import logging
import uuid

from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F

from apps.content.models import Article, ArticleViewsFlush
from starmall import cache_client

logger = logging.getLogger(__name__)


def _pending_key() -> str:
    return cache.make_key("content:article-views")


def _flushing_prefix() -> str:
    return cache.make_key("content:article-views:flushing:")


def article_view_count(*, article_id: int) -> int:
    """Count one view of the article in Redis; return the views pending for it (0 when Redis
    is unavailable: the view is lost, the page is not)."""
    try:
        return int(cache_client.redis_client().hincrby(_pending_key(), str(article_id), 1))
    except Exception:  # noqa: BLE001 - a view count is not worth failing the page
        logger.warning("could not count an article view", exc_info=True)
        return 0


def article_views_pending(article_ids: list[int]) -> dict[int, int]:
    """``{article_id: views not yet flushed}`` (0 for none; all 0 when Redis is unavailable)."""
    if not article_ids:
        return {}
    try:
        values = cache_client.redis_client().hmget(_pending_key(), [str(i) for i in article_ids])
    except Exception:  # noqa: BLE001
        return {i: 0 for i in article_ids}
    return {i: int(v or 0) for i, v in zip(article_ids, values, strict=True)}


def article_views_flush() -> int:
    """Move the views counted in Redis into ``Article.views``; returns the views added.

    First any flush key an earlier flush left behind (it died between rename and delete),
    then the pending hash, renamed atomically to a fresh flush key so that views counted from
    now on go to a new hash."""
    conn = cache_client.redis_client()
    added = 0
    for key in list(conn.scan_iter(match=_flushing_prefix() + "*", count=100)):
        added += _flush_key(conn, key)
    fresh = _flushing_prefix() + uuid.uuid4().hex
    try:
        conn.rename(_pending_key(), fresh)
    except Exception as exc:  # noqa: BLE001 - "no such key": nothing viewed since the last flush
        if "no such key" not in str(exc).lower():
            raise
        return added
    return added + _flush_key(conn, fresh)


def _flush_key(conn, key) -> int:
    """Add one flush key's counts once: the UNIQUE ``ArticleViewsFlush`` row written with the
    UPDATEs says the key was applied, so a flush that died before deleting it, or two flushes
    at once, never add it twice. The key is deleted after commit (and by whoever finds it
    already applied)."""
    name = key.decode() if isinstance(key, bytes) else key
    counts = {int(k): int(v) for k, v in conn.hgetall(name).items() if int(v) > 0}
    try:
        with transaction.atomic():
            ArticleViewsFlush.objects.create(key=name[-200:], views=sum(counts.values()))
            for article_id in sorted(counts):  # id order: two flushes never deadlock
                Article.objects.filter(pk=article_id).update(views=F("views") + counts[article_id])
    except IntegrityError:  # applied before: only the key is left to delete
        conn.delete(name)
        return 0
    conn.delete(name)
    return sum(counts.values())
