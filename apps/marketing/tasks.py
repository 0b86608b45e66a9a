"""Celery tasks of marketing: thin wrappers around the services."""

from celery import shared_task

from apps.marketing import coupons


@shared_task
def coupon_issue_run(issue_id: int) -> str:
    """Staff issued a template to many customers: grant them (idempotent per customer)."""
    return coupons.coupon_issue_run(issue_id=issue_id)


@shared_task
def coupon_issues_redispatch() -> int:
    """Beat: re-push issues not yet done (the CouponIssue row is the outbox)."""
    return coupons.coupon_issues_redispatch()


@shared_task
def bargains_expire_due() -> int:
    """Beat: open 砍价 records past their time become expired."""
    from apps.marketing import bargains

    return bargains.bargains_expire_due()


@shared_task
def birthday_gifts_give() -> int:
    """Beat (daily): birthday coupons to today's birthdays, once per customer and year."""
    from apps.marketing import gifts

    return gifts.birthday_gifts_give()
