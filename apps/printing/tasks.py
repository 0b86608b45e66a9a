"""Celery tasks of printing: thin wrappers (ids in, call a service)."""

from celery import shared_task

from apps.printing import services


@shared_task
def print_job_send_task(job_id: int) -> str:
    """Send one print job (a ticket or a waybill); a redelivery of a done job prints nothing."""
    return services.print_job_send(job_id)


@shared_task
def print_jobs_redispatch() -> int:
    """Beat: push again the print jobs still pending (the row is the source of truth)."""
    return services.print_jobs_redispatch()
