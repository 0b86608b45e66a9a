"""Customer tags: staff tag by hand, rules tag by what customers did (``models_tags``).

Every write is idempotent by UNIQUE (customer, tag): tagging twice, a double click, or two rule
runs at once leave one row (``bulk_create(ignore_conflicts=True)``). Rules are evaluated by
``apps.crm.tag_rules`` (it reads orders, which sit above members) and handed to
:func:`tag_rule_sync` as the set of matching customers.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from apps.members.models_tags import CustomerTag, Tag
from starmall.errors import InvalidInput, NotFound


def tag_validate(*, rule: str, rule_spent_fen: int | None, rule_days: int | None, rule_product_id: int | None) -> None:
    """Check a tag's rule terms (admin form); InvalidInput with per-field problems. SPENT_OVER
    needs ``rule_spent_fen`` >= 1 fen and ``rule_days`` >= 1; BOUGHT_PRODUCT a product."""
    problems: dict[str, list[str]] = {}
    if rule == Tag.Rule.SPENT_OVER:
        if not (rule_spent_fen or 0) >= 1:
            problems["rule_spent_fen"] = ["请填写消费金额（至少 0.01 元）"]
        if not (rule_days or 0) >= 1:
            problems["rule_days"] = ["请填写统计天数（至少 1 天）"]
    if rule == Tag.Rule.BOUGHT_PRODUCT and not rule_product_id:
        problems["rule_product"] = ["请选择商品"]
    if problems:
        raise InvalidInput("标签规则设置有误。", **problems)


def _tag(tag_id: int) -> Tag:
    tag = Tag.objects.filter(pk=tag_id).first()
    if tag is None:
        raise NotFound("没有这个标签。", tag_id=tag_id)
    return tag


def customers_tag(*, tag_id: int, customer_ids: list[int]) -> int:
    """Staff tag these customers by hand; returns how many newly carry the tag (those that
    already did are left as they are). Raises NotFound for an unknown tag."""
    tag = _tag(tag_id)
    with transaction.atomic():
        before = CustomerTag.objects.filter(tag=tag, customer_id__in=customer_ids).count()
        CustomerTag.objects.bulk_create(
            [CustomerTag(tag=tag, customer_id=pk, source=CustomerTag.Source.MANUAL) for pk in set(customer_ids)],
            ignore_conflicts=True,
        )
        return CustomerTag.objects.filter(tag=tag, customer_id__in=customer_ids).count() - before


def customers_untag(*, tag_id: int, customer_ids: list[int]) -> int:
    """Staff take the tag off these customers (however it was put there); returns how many.
    A rule tag puts it back at its next run while the customer still matches."""
    return CustomerTag.objects.filter(tag_id=tag_id, customer_id__in=customer_ids).delete()[0]


def tag_rule_sync(*, tag_id: int, matching: set[int]) -> tuple[int, int]:
    """Make the tag's rule-made rows equal ``matching`` (customer ids), in one transaction:
    missing ones added (source RULE; one already tagged by hand stays as it is), rule-made rows
    of customers no longer matching removed; hand-made rows are never removed. Returns
    ``(added, removed)``; running it twice changes nothing the second time."""
    with transaction.atomic():
        have = set(CustomerTag.objects.filter(tag_id=tag_id).values_list("customer_id", flat=True))
        stale = CustomerTag.objects.filter(tag_id=tag_id, source=CustomerTag.Source.RULE).exclude(
            customer_id__in=matching
        )
        removed = stale.delete()[0] if have - matching else 0
        new = sorted(matching - have)
        added = len(
            CustomerTag.objects.bulk_create(
                [CustomerTag(tag_id=tag_id, customer_id=pk, source=CustomerTag.Source.RULE) for pk in new],
                ignore_conflicts=True,
                batch_size=1000,
            )
        )
        Tag.objects.filter(pk=tag_id).update(evaluated_at=timezone.now())
    return added, removed


def tag_customer_ids(*, tag_id: int) -> QuerySet:
    """Ids of the customers carrying the tag, ascending (the coupon-to-tag issue walks them)."""
    return CustomerTag.objects.filter(tag_id=tag_id).order_by("customer_id").values_list("customer_id", flat=True)


def tags_with_rules() -> QuerySet[Tag]:
    """Active tags whose rule is not MANUAL (what the rule job evaluates)."""
    return Tag.objects.filter(is_active=True).exclude(rule=Tag.Rule.MANUAL).select_related("rule_product")
