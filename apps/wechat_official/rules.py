"""A reply rule's fields checked for its trigger and reply type, the others cleared: what the back
office's reply-rule form saves (the browser shows only the chosen type's fields; the server
decides what is kept).

Reply types (``ReplyRule.ReplyKind``, the passive replies WeChat accepts): text — ``text``;
image / voice — ``material``, a material of that kind already uploaded (a media_id); news —
``articles``, 1 to 8 of ``{"title", "description", "image", "url"}`` with a title and an
http(s) url each. Triggers: keyword matches need ``keyword``; a scan may name a ``scene``.
"""

from __future__ import annotations

from apps.wechat_official.models import Material, ReplyRule
from starmall.errors import InvalidInput

MAX_ARTICLES = 8
KIND = ReplyRule.ReplyKind
MATCH = ReplyRule.Match
_KEYWORD_MATCHES = {MATCH.KEYWORD_EXACT, MATCH.KEYWORD_CONTAINS}


def _articles(value, errors: dict[str, str]) -> list[dict]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_ARTICLES:
        errors["articles"] = f"图文回复需要 1 到 {MAX_ARTICLES} 条图文。"
        return []
    out = []
    for n, article in enumerate(value, start=1):
        article = article if isinstance(article, dict) else {}
        row = {key: str(article.get(key) or "").strip() for key in ("title", "description", "image", "url")}
        if not row["title"] or not row["url"].startswith(("http://", "https://")):
            errors["articles"] = f"第 {n} 条图文需要标题（title）和以 http:// 或 https:// 开头的链接（url）。"
        out.append(row)
    return out


def reply_rule_clean(
    *, match: str, keyword: str, scene: str, reply_kind: str, text: str, material: Material | None, articles
) -> dict:
    """``{"keyword", "scene", "text", "material", "articles"}`` as the rule stores them: the
    reply type's own field checked, every other reply field emptied (``""`` / None / ``[]``),
    ``keyword`` kept only for keyword matches and ``scene`` only for scans. Raises InvalidInput
    whose ``detail["fields"]`` maps a form field to its Chinese error."""
    errors: dict[str, str] = {}
    out = {
        "keyword": (keyword or "").strip() if match in _KEYWORD_MATCHES else "",
        "scene": (scene or "").strip() if match == MATCH.SCAN else "",
        "text": "",
        "material": None,
        "articles": [],
    }
    if match in _KEYWORD_MATCHES and not out["keyword"]:
        errors["keyword"] = "关键词回复需要填写关键词。"
    if reply_kind == KIND.TEXT:
        out["text"] = (text or "").strip()
        if not out["text"]:
            errors["text"] = "文字回复需要填写文字内容。"
    elif reply_kind in (KIND.IMAGE, KIND.VOICE):
        out["material"] = material
        label = KIND(reply_kind).label
        if material is None or material.kind != reply_kind:
            errors["material"] = f"{label}回复需要选择一个{label}素材。"
        elif not material.media_id:
            errors["material"] = "该素材还没有上传到微信，请先在「公众号素材」上传。"
    elif reply_kind == KIND.NEWS:
        out["articles"] = _articles(articles, errors)
    else:
        errors["reply_kind"] = "请选择回复类型。"
    if errors:
        raise InvalidInput(f"自动回复有 {len(errors)} 处需要修改。", fields=errors)
    return out
