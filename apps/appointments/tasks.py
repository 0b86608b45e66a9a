"""Celery tasks of appointments."""

from celery import shared_task

from apps.appointments import slots


@shared_task
def slots_generate() -> dict:
    """Beat, every 8 hours: slots for the next 8 days; reruns add nothing."""
    result = slots.slots_generate()
    return {"created": result.created, "removed": result.removed}
