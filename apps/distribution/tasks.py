"""Celery tasks of distribution: thin wrappers around the services."""

from celery import shared_task

from apps.distribution import commissions, transfers


@shared_task
def transfer_send(bill_id: int) -> str:
    """One attempt at an approved withdrawal's merchant transfer (leased; query before resend)."""
    return transfers.transfer_send(bill_id=bill_id)


@shared_task
def transfers_sweep() -> dict:
    """Beat, every minute: unsent and uncertain transfers, queries, stuck-transfer alerts."""
    return transfers.transfers_sweep()


@shared_task
def commissions_release_due() -> int:
    """Beat, every 10 minutes: frozen commissions of orders completed COMMISSION_FREEZE_DAYS ago."""
    return commissions.commissions_release_due()


@shared_task
def transfers_reconcile() -> dict:
    """Beat, daily 10:40 Beijing (beside the bill's reconciliation): yesterday's transfers vs WeChat."""
    return transfers.transfers_reconcile()
