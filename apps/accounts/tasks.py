"""Celery tasks of accounts: thin wrappers (call a service)."""

from celery import shared_task


@shared_task
def points_release_due() -> int:
    """Beat: frozen points whose order completed ``POINTS_FREEZE_DAYS`` ago become spendable."""
    from apps.accounts import services

    return services.points_release_due()
