"""Celery tasks of crm: thin wrappers around the services."""

from celery import shared_task

from apps.crm import tag_coupons, tag_rules


@shared_task
def tag_rules_evaluate() -> int:
    """Beat: every active rule tag evaluated over orders (idempotent)."""
    return tag_rules.tag_rules_evaluate()


@shared_task
def tag_coupon_issue_run(issue_id: int) -> str:
    """Staff issued a template to a tag: grant it (once per customer per issue)."""
    return tag_coupons.tag_coupon_issue_run(issue_id=issue_id)


@shared_task
def tag_coupon_issues_redispatch() -> int:
    """Beat: re-push tag issues not yet done (the TagCouponIssue row is the outbox)."""
    return tag_coupons.tag_coupon_issues_redispatch()
