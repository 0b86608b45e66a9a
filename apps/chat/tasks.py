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
