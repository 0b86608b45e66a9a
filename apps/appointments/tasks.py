"""Celery tasks of appointments."""

from celery import shared_task

from apps.appointments import slots


@shared_task
def slots_generate() -> dict:
    """Beat, every 8 hours: slots for the next 8 days; reruns add nothing."""
    result = slots.slots_generate()
    return {"created": result.created, "removed": result.removed}


@shared_task
def waitlist_sweep() -> dict:
    """Beat, every sweep: expire, mark booked, notify the dates that list a start again."""
    from apps.appointments import waitlist

    return waitlist.waitlist_sweep()


@shared_task
def waitlist_message_send(entry_id: int) -> str:
    """Send one entry's ``waitlist_open`` message (the row says whether it was sent)."""
    from apps.appointments import waitlist

    return waitlist.waitlist_message_send(entry_id=entry_id)
