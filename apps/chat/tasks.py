"""Celery tasks of the chat: thin wrappers (ids in, call a service)."""

from celery import shared_task

from apps.chat import services


@shared_task
def chat_notice_send(notice_id: int) -> str:
    """Send one offline notice (the row says whether it was sent already)."""
    return services.notice_send(notice_id=notice_id)


@shared_task
def chat_notices_resend() -> int:
    """Beat: notices whose push was lost (Redis down at commit) are pushed again."""
    return services.notices_resend()


@shared_task
def consultation_reminders() -> dict:
    """Beat: write the reminders that became due and push the pending ones."""
    from apps.chat import reminders

    return reminders.reminders_schedule()


@shared_task
def consultation_reminder_send(reminder_id: int) -> str:
    """Send one reminder (the row says whether it was sent, skipped or is leased)."""
    from apps.chat import reminders

    return reminders.reminder_send(reminder_id=reminder_id)
