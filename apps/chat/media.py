"""Which URLs are files we host: a chat's voice and image messages must point at our uploads.

Until ``POST /api/v1/uploads`` (issue 10) brings its own check, the rule is the same prefix:
an absolute URL under ``SITE_URL`` + ``MEDIA_URL``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

MAX_URL_CHARS = 500


def is_our_media_url(url: str) -> bool:
    """True when ``url`` is an absolute http(s) URL under ``SITE_URL + MEDIA_URL`` (our uploads),
    with no ``..``, query or fragment; False for anything else (other hosts, relative paths)."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS:
        return False
    media = getattr(settings, "MEDIA_URL", "") or "/media/"
    if not media.startswith(("http://", "https://")):
        media = settings.SITE_URL.rstrip("/") + "/" + media.lstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.query or parts.fragment or ".." in parts.path:
        return False
    if any(ord(ch) < 33 for ch in url):
        return False
    return url.startswith(media) and len(url) > len(media)
