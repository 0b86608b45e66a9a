"""Tag rules evaluated over orders (the rules are ``members.Tag``; members sits below orders,
so the reading is done here and handed to ``members.tags.tag_rule_sync``).

An order counts when it was paid and is not cancelled, refunding or refunded (status paid,
shipped or completed). SPENT_OVER: the customer's counted orders paid in the last
``rule_days`` days have ``pay_fen`` summing to at least ``rule_spent_fen``. BOUGHT_PRODUCT: a
counted order has a line of ``rule_product`` (paid in the last ``rule_days`` days when set).
Run by beat (``tag-rules-evaluate``) and on demand (admin action); safe twice or at once.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db.models import Sum
from django.utils import timezone

from apps.members import tags
from apps.members.models_tags import Tag
from apps.orders.models import Order, OrderLine, OrderStatus

logger = logging.getLogger(__name__)

COUNTED = (OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.COMPLETED)


def tag_rule_matches(tag: Tag, *, now: dt.datetime | None = None) -> set[int]:
    """Ids of the customers the tag's rule matches now (empty for MANUAL)."""
    now = now or timezone.now()
    since = now - dt.timedelta(days=tag.rule_days) if tag.rule_days else None
    if tag.rule == Tag.Rule.SPENT_OVER:
        orders = Order.objects.filter(status__in=COUNTED, paid_at__gte=since)
        spent = orders.values("customer_id").annotate(spent=Sum("pay_fen")).filter(spent__gte=tag.rule_spent_fen)
        return {row["customer_id"] for row in spent}
    if tag.rule == Tag.Rule.BOUGHT_PRODUCT:
        lines = OrderLine.objects.filter(product_id=tag.rule_product_id, order__status__in=COUNTED)
        if since is not None:
            lines = lines.filter(order__paid_at__gte=since)
        return set(lines.values_list("order__customer_id", flat=True).distinct())
    return set()


def tag_rule_apply(*, tag_id: int, now: dt.datetime | None = None) -> tuple[int, int]:
    """Evaluate one tag's rule and sync its rule-made rows; returns ``(added, removed)``."""
    tag = Tag.objects.get(pk=tag_id)
    if tag.rule == Tag.Rule.MANUAL:
        return 0, 0
    return tags.tag_rule_sync(tag_id=tag.pk, matching=tag_rule_matches(tag, now=now))


def tag_rules_evaluate(*, now: dt.datetime | None = None) -> int:
    """Beat: every active rule tag; returns how many tags were evaluated."""
    done = 0
    for tag_id in tags.tags_with_rules().values_list("pk", flat=True):
        added, removed = tag_rule_apply(tag_id=tag_id, now=now)
        logger.info("tag %s: %s added, %s removed", tag_id, added, removed)
        done += 1
    return done
