"""Article HTML as the API serves it: an allow-list sanitizer (nh3, the Rust ``ammonia``).

Staff type rich text in the back office; whatever they (or a stolen staff login, or a paste
from elsewhere) put in, the mini-program gets only the tags and attributes below: no
``<script>``/``<style>``/``<iframe>``, no ``on*`` event attributes, no ``style`` (CSS
expressions), and links and pictures only with ``http``/``https`` (links also ``mailto``/
``tel``) URLs — ``javascript:``, ``data:`` and ``vbscript:`` URLs are dropped, also when written
with entities (nh3 decodes before it checks).
"""

from __future__ import annotations

import nh3

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "strong",
    "b",
    "em",
    "i",
    "u",
    "s",
    "del",
    "blockquote",
    "pre",
    "code",
    "ul",
    "ol",
    "li",
    "a",
    "img",
    "span",
    "div",
    "section",
    "figure",
    "figcaption",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "sub",
    "sup",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan"},
}
ALLOWED_URL_SCHEMES = {"http", "https", "mailto", "tel"}


def _no_data_images(tag: str, attribute: str, value: str) -> str | None:
    """nh3's attribute filter: ``img src`` only over http(s) (no ``data:`` or relative paths)."""
    if tag == "img" and attribute == "src" and not value.lower().startswith(("http://", "https://")):
        return None
    return value


def safe_html(html: str) -> str:
    """``html`` with only the allow-listed tags, attributes and URL schemes left; links get
    ``rel="noopener noreferrer"``. Text is kept (escaped where needed); a dropped tag's
    content stays unless it is script/style."""
    return nh3.clean(
        html or "",
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=ALLOWED_URL_SCHEMES,
        link_rel="noopener noreferrer",
        attribute_filter=_no_data_images,
        strip_comments=True,
    )
