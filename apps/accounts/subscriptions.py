"""Subscription messages: the templates staff manage, the send every sender goes through, and
the customers who refused a kind (WeChat errcode 43101).

Senders on layers above ``accounts`` (orders' paid/shipped follow-ups, chat reminders and notices)
call :func:`subscribe_send` with the shop's values by name (``{"order_no": "SM1...", "amount":
"128.00元"}``); the kind's template row gives the WeChat template id and the keyword of each value
(``fields``), a kind without a row uses :data:`DEFAULTS` (the settings' template id), a switched-off
row sends nothing. A 43101 answer (no subscription left) is a :class:`SubscribeRefusal` per
customer and kind: that kind is not sent to them for ``SUBSCRIBE_REFUSAL_QUIET_HOURS``, then tried again.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts.models import Customer, SubscribeRefusal, SubscribeTemplate

logger = logging.getLogger(__name__)

Kind = SubscribeTemplate.Kind
Scene = SubscribeTemplate.Scene

#: kind -> (scene, the settings name of its default template id, default fields map)
DEFAULTS: dict[str, tuple[str, str, dict[str, str]]] = {
    Kind.ORDER_PAID: (
        Scene.ORDER,
        "WECHAT_SUBSCRIBE_TEMPLATE_PAID",
        {"order_no": "character_string1", "amount": "amount2", "paid_at": "time3"},
    ),
    Kind.ORDER_SHIPPED: (
        Scene.ORDER,
        "WECHAT_SUBSCRIBE_TEMPLATE_SHIPPED",
        {
            "order_no": "character_string1",
            "carrier": "thing2",
            "tracking_no": "character_string3",
            "shipped_at": "time4",
        },
    ),
    Kind.CONSULTATION_REMINDER: (
        Scene.CONSULTATION,
        "WECHAT_SUBSCRIBE_TEMPLATE_REMINDER",
        {"teacher": "thing1", "start": "time2", "note": "thing3", "order_no": "character_string4"},
    ),
    Kind.CHAT_MESSAGE: (
        Scene.CONSULTATION,
        "WECHAT_SUBSCRIBE_TEMPLATE_CHAT",
        {"sender": "thing1", "note": "thing2", "order_no": "character_string3"},
    ),
    Kind.WAITLIST_OPEN: (
        Scene.CONSULTATION,
        "WECHAT_SUBSCRIBE_TEMPLATE_WAITLIST",
        {"teacher": "thing1", "date": "date2", "note": "thing3"},
    ),
}

#: what each value name holds, for the back office's help text
VALUE_NAMES = {
    Kind.ORDER_PAID: "order_no, amount, paid_at",
    Kind.ORDER_SHIPPED: "order_no, carrier, tracking_no, shipped_at",
    Kind.CONSULTATION_REMINDER: "teacher, start, note, order_no",
    Kind.CHAT_MESSAGE: "sender, note, order_no",
    Kind.WAITLIST_OPEN: "teacher, date, note",
}

SENT, SKIPPED, REFUSED = "sent", "skipped", "refused"


@dataclass(frozen=True)
class Template:
    """The template a kind is sent with: WeChat's ``template_id`` and ``fields`` (value name ->
    template keyword)."""

    kind: str
    scene: str
    template_id: str
    fields: dict[str, str]


def template_for(kind: str) -> Template | None:
    """The template ``kind`` is sent with: staff's row when there is one (None when it is
    switched off), else the built-in default (settings' template id). Raises KeyError for an
    unknown kind."""
    scene, setting, fields = DEFAULTS[kind]
    row = SubscribeTemplate.objects.filter(kind=kind).first()
    if row is None:
        return Template(kind=kind, scene=scene, template_id=getattr(settings, setting), fields=dict(fields))
    if not row.is_active or not row.template_id:
        return None
    return Template(kind=kind, scene=row.scene, template_id=row.template_id, fields=dict(row.fields or fields))


def templates_for_scene(scene: str | None) -> list[Template]:
    """The active templates of ``scene`` (every scene when None), in kind order: what the
    mini-program asks the customer to subscribe to (``GET /api/v1/subscribe-templates``)."""
    found = [t for kind in DEFAULTS if (t := template_for(kind)) is not None]
    return [t for t in found if scene is None or t.scene == scene]


def message_data(template: Template, values: dict[str, str]) -> dict[str, dict[str, str]]:
    """WeChat's ``data`` for ``values`` by the template's fields map: ``{"thing1": {"value": ..}}``.
    Values the map does not name are left out; ``thing`` keywords are cut to WeChat's 20 characters."""
    data = {}
    for name, keyword in template.fields.items():
        if name in values:
            value = str(values[name])
            data[keyword] = {"value": value[:20] if keyword.startswith("thing") else value}
    return data


def refused_recently(*, customer_id: int, kind: str, now: dt.datetime | None = None) -> bool:
    """True while the customer's last 43101 refusal of ``kind`` is younger than
    ``SUBSCRIBE_REFUSAL_QUIET_HOURS``."""
    now = now or timezone.now()
    since = now - dt.timedelta(hours=settings.SUBSCRIBE_REFUSAL_QUIET_HOURS)
    return SubscribeRefusal.objects.filter(customer_id=customer_id, kind=kind, refused_at__gt=since).exists()


def refusal_record(*, customer_id: int, kind: str, template_id: str, now: dt.datetime | None = None) -> None:
    """Remember that the customer refused ``kind`` (one row per customer and kind: renewed by a
    conditional UPDATE, else INSERTed under the UNIQUE; a concurrent insert's winner is renewed)."""
    now = now or timezone.now()
    renew = dict(refused_at=now, template_id=template_id, times=F("times") + 1)
    if SubscribeRefusal.objects.filter(customer_id=customer_id, kind=kind).update(**renew):
        return
    try:
        with transaction.atomic():
            SubscribeRefusal.objects.create(customer_id=customer_id, kind=kind, template_id=template_id, refused_at=now)
    except IntegrityError:
        SubscribeRefusal.objects.filter(customer_id=customer_id, kind=kind).update(**renew)


def subscribe_send(*, customer: Customer, kind: str, values: dict[str, str], page: str = "") -> str:
    """Send the subscription message ``kind`` to ``customer``; returns SENT, SKIPPED (template
    switched off, or the customer refused it within the quiet hours: WeChat is not called) or
    REFUSED (WeChat answered 43101 now: remembered, not to be retried).

    Call with no transaction open (the send is recorded by the caller's next statement).
    Raises what WeChat's client raises otherwise (network errors, other errcodes): retry.
    """
    from apps.accounts import wechat

    template = template_for(kind)
    if template is None or refused_recently(customer_id=customer.pk, kind=kind):
        return SKIPPED
    try:
        wechat.send_subscribe_message(
            openid=customer.openid, template_id=template.template_id, page=page, data=message_data(template, values)
        )
    except wechat.SubscribeRefused:
        refusal_record(customer_id=customer.pk, kind=kind, template_id=template.template_id)
        logger.info("subscription message %s refused by customer %s (43101)", kind, customer.pk)
        return REFUSED
    return SENT
