"""Reads of the official account: which reply rule answers a message or event."""

from __future__ import annotations

from apps.wechat_official.models import ReplyRule

Match = ReplyRule.Match


def reply_rule_for(
    *, msg_type: str, event: str, content: str = "", event_key: str = "", scene: str = ""
) -> ReplyRule | None:
    """The active rule that answers (highest ``priority`` first, then the oldest):

    - a text message, or a menu click (its key): an exact keyword, else a contained keyword,
      else the default rule;
    - a follow: by a channel code, the scan rule of that scene, else a scan rule for any code;
      then the follow rule;
    - a scan by a follower: the scan rule of that scene, else one for any code;
    - other messages (image, voice, ...): the default rule; other events: none.
    """
    active = ReplyRule.objects.filter(is_active=True).select_related("material").order_by("-priority", "id")
    if msg_type == "text" or event == "click":
        text = (content if msg_type == "text" else event_key).strip()
        if not text:
            return active.filter(match=Match.DEFAULT).first()
        exact = active.filter(match=Match.KEYWORD_EXACT, keyword=text).first()
        if exact is not None:
            return exact
        for rule in active.filter(match=Match.KEYWORD_CONTAINS).exclude(keyword=""):
            if rule.keyword in text:
                return rule
        return active.filter(match=Match.DEFAULT).first()
    if event in ("subscribe", "scan"):
        if scene:
            rule = (
                active.filter(match=Match.SCAN, scene=scene).first()
                or active.filter(match=Match.SCAN, scene="").first()
            )
            if rule is not None:
                return rule
        return active.filter(match=Match.FOLLOW).first() if event == "subscribe" else None
    if msg_type == "event":
        return None
    return active.filter(match=Match.DEFAULT).first()
