"""Celery tasks of accounts: thin wrappers (call a service)."""

from celery import shared_task


@shared_task
def points_release_due() -> int:
    """Beat: frozen points whose order completed ``POINTS_FREEZE_DAYS`` ago become spendable."""
    from apps.accounts import wallet

    return wallet.points_release_due()


@shared_task
def tokens_revoke_sweep() -> dict:
    """Beat, every ``BEAT_SWEEP_SECONDS``: revoke the tokens of deactivated customers that Redis
    has not confirmed yet, and of inactive customers who still have tokens (deactivated by SQL)."""
    from apps.accounts import revocations

    return revocations.token_revocations_sweep()
