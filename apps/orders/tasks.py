"""Celery tasks of orders: thin wrappers (ids in, call a service)."""

from celery import shared_task

from apps.orders import followups, services


@shared_task
def followup_run(followup_id: int) -> str:
    """Run one outbox row (queue ``followups``); a redelivery of a done row does nothing."""
    return followups.followup_execute(followup_id)


@shared_task
def followup_run_many(followup_ids: list[int]) -> list[str]:
    """Run the outbox rows one transaction recorded (queue ``followups``): one message per paid
    order for all its follow-ups; a redelivery skips the done rows."""
    return followups.followups_execute(followup_ids)


@shared_task
def followups_redispatch() -> int:
    """Beat: re-push follow-ups still pending (the row is the source of truth, not Redis)."""
    return followups.followups_redispatch()


@shared_task
def orders_complete_consultations() -> int:
    """Beat, hourly: paid consultations whose slot has passed become completed."""
    return services.orders_complete_held_consultations()


@shared_task
def orders_auto_receive() -> int:
    """Beat, every 10 minutes: shipped goods orders AUTO_RECEIVE_DAYS after shipping complete."""
    from apps.orders import shipments

    return shipments.orders_auto_receive()


@shared_task
def flash_quotas_reconcile() -> dict:
    """Beat: give back the units of flash-sale reservations whose draft expired unused, then
    load or correct every live 秒杀's Redis quota from PostgreSQL (safe on several machines)."""
    from apps.orders import flash_reservations

    given = flash_reservations.reservations_expire()
    return {"given_back": given, "corrected": flash_reservations.quotas_reconcile()}
