"""Coupons issued to a tag (API.md "Members": staff issue coupons to a tag in the back office).

:func:`tag_coupon_issue_start` writes a ``TagCouponIssue`` row (the outbox) and pushes the task
after commit; :func:`tag_coupon_issue_run` walks the tag's customers with marketing's one issue walk
(``marketing.coupons.coupon_issue_walk``): in id order from the row's ``cursor``, each customer in one
transaction with their ``TagCouponGrant`` row, whose UNIQUE (issue, customer) rolls back a coupon an
earlier, retried or parallel run already gave. When the template runs out, the customers left are
counted ``skipped`` and the issue is DONE; beat re-pushes issues not DONE
(:func:`tag_coupon_issues_redispatch`). Customers tagged after the walk passed them are not included.
"""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.utils import timezone

from apps.crm.models import TagCouponGrant, TagCouponIssue
from apps.marketing import coupons
from apps.marketing.models import CouponTemplate
from apps.members import tags
from apps.members.models_tags import Tag
from starmall import dispatch
from starmall.errors import NotFound


def tag_coupon_issue_start(*, tag_id: int, template_id: int, created_by: str = "") -> TagCouponIssue:
    """Staff (permission ``marketing.issue_coupon``) issue the template to the tag's customers,
    in the background; returns the issue row. NotFound: no such tag, or the template is missing
    or not active."""
    if not Tag.objects.filter(pk=tag_id).exists():
        raise NotFound("没有这个标签。", tag_id=tag_id)
    if not CouponTemplate.objects.filter(pk=template_id, is_active=True).exists():
        raise NotFound("没有这个优惠券活动，或已停用。", template_id=template_id)
    with transaction.atomic():
        issue = TagCouponIssue.objects.create(tag_id=tag_id, template_id=template_id, created_by=created_by)
        transaction.on_commit(partial(_push, issue.pk))
    return issue


def _push(issue_id: int, *, sweep: bool = False) -> None:
    from apps.crm.tasks import tag_coupon_issue_run as task  # tasks import this module

    dispatch.push(task, issue_id, sweep=sweep)


def tag_coupon_issue_run(*, issue_id: int) -> str:
    """Grant the issue's coupons to the tag's customers through marketing's one issue walk
    (``coupons.coupon_issue_walk``); the once-key is the ``TagCouponGrant`` row's UNIQUE (issue,
    customer), written with each coupon. Returns its status. Safe to run twice, or twice at once."""
    now = timezone.now()
    issue = TagCouponIssue.objects.select_related("template").filter(pk=issue_id).first()
    if issue is None:
        return "done"

    # A customer given the coupon before fails the grant row's UNIQUE: the walk rolls back that
    # customer's transaction, coupon and template counter included.
    def grant(customer_id: int):
        coupon = coupons.coupon_grant(template=issue.template, customer_id=customer_id, now=now)
        if coupon is not None:
            TagCouponGrant(issue=issue, customer_id=customer_id, coupon=coupon).save(force_insert=True)
        return coupon

    audience = tags.tag_customer_ids(tag_id=issue.tag_id)
    return coupons.coupon_issue_walk(issue, audience=audience, key="customer_id", grant=grant, now=now)


def tag_coupon_issues_redispatch() -> int:
    """Beat: push again every issue not DONE (the row is the source of truth, not Redis)."""
    return coupons.coupon_issues_redispatch(TagCouponIssue, _push)
