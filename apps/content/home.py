"""The home page (``GET /home``) from the blocks staff edit, cached in Redis.

Every request reads the home page and it changes only when staff edit a block, so all blocks
that are switched on (with their time windows) are cached as one value; the windows are
applied at read time, so a block appears or disappears on the minute without a cache drop.
:func:`home_cache_clear` runs on every write (``apps.content.apps``: saves and deletes of
any block), now and again after commit (``starmall.cache_drop``) — the freight terms' pattern
(``apps.shipping.selectors``). :data:`HOME_CACHE_SECONDS` bounds how long a reader that loaded
the old rows just before a commit can keep them. Redis errors fall back to the database.
"""

from __future__ import annotations

import logging

from django.core.cache import cache
from django.utils import timezone

from apps.content.models import Banner, HotSearch, NavItem, Notice
from apps.files.services import public_url
from starmall import cache_drop

logger = logging.getLogger(__name__)

HOME_CACHE_KEY = "content:home:v1"
HOME_CACHE_SECONDS = 60


def home_page(*, now=None) -> dict:
    """``{"banners": [{"image_url", "link"}], "nav": [{"title", "icon_url", "link"}],
    "hot_search": [str], "notices": [str]}``: the blocks switched on whose window holds ``now``
    (aware; default the current time), each list in staff's order (``sort``, then id). URLs are
    absolute (``public_url``)."""
    now = now or timezone.now()
    blocks = _blocks_cached()

    def shown(kind):
        return [
            b
            for b in blocks[kind]
            if (b["starts_at"] is None or b["starts_at"] <= now) and (b["ends_at"] is None or now < b["ends_at"])
        ]

    return {
        "banners": [{"image_url": public_url(b["image"]), "link": b["link"]} for b in shown("banners")],
        "nav": [{"title": b["title"], "icon_url": public_url(b["icon"]), "link": b["link"]} for b in shown("nav")],
        "hot_search": [b["word"] for b in shown("hot_search")],
        "notices": [b["text"] for b in shown("notices")],
    }


def _blocks_cached() -> dict[str, list[dict]]:
    try:
        blocks = cache.get(HOME_CACHE_KEY)
    except Exception:  # noqa: BLE001 - Redis down or hung: the database answers
        logger.warning("home page cache unavailable", exc_info=True)
        return _blocks_from_db()
    if blocks is None:
        blocks = _blocks_from_db()
        try:
            cache.set(HOME_CACHE_KEY, blocks, timeout=HOME_CACHE_SECONDS)
        except Exception:  # noqa: BLE001
            logger.warning("could not cache the home page", exc_info=True)
    return blocks


def _blocks_from_db() -> dict[str, list[dict]]:
    """The switched-on blocks of each kind with their windows: four small queries."""
    window = ("starts_at", "ends_at")
    return {
        "banners": list(Banner.objects.filter(is_active=True).order_by("sort", "id").values("image", "link", *window)),
        "nav": list(
            NavItem.objects.filter(is_active=True).order_by("sort", "id").values("title", "icon", "link", *window)
        ),
        "hot_search": list(HotSearch.objects.filter(is_active=True).order_by("sort", "id").values("word", *window)),
        "notices": list(Notice.objects.filter(is_active=True).order_by("sort", "id").values("text", *window)),
    }


def home_cache_clear() -> None:
    """A block is being written: drop the cached home page now and again after commit."""
    cache_drop.drop_now_and_after_commit([HOME_CACHE_KEY])
