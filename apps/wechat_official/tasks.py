"""Celery tasks of the official account: thin wrappers (ids in, call a service)."""

from celery import shared_task

from apps.wechat_official import services


@shared_task
def mass_batch_send(batch_id: int) -> str:
    """Send one mass-send batch (its row says whether it was sent already)."""
    return services.mass_batch_send(batch_id=batch_id)


@shared_task
def mass_batches_sweep() -> int:
    """Beat: push pending batches again; put back batches a dead worker left sending."""
    return services.mass_batches_sweep()
