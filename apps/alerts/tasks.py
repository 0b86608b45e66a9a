"""Celery tasks of alerts: thin wrappers (ids in, call a service)."""

from celery import shared_task

from apps.alerts import services


@shared_task
def alert_send(alert_id: int) -> str:
    """Queued at commit by ``alert_raise``: one attempt to send the alert."""
    return services.alert_deliver(alert_id=alert_id)


@shared_task
def alerts_sweep() -> dict:
    """Beat, every minute: send alerts whose task was lost or whose back-off is over."""
    return services.alerts_sweep()
