"""Reads of the chat: a caller's sessions with unread counts, a session's messages."""

from __future__ import annotations

from django.db.models import Count, F, Q, QuerySet

from apps.chat.models import ChatMessage, ChatSession, Side


def session_list(*, customer_id: int) -> QuerySet[ChatSession]:
    """Sessions the customer takes part in (as the paying customer or as the linked teacher),
    newest activity first, each annotated with ``unread_as_customer`` / ``unread_as_teacher``
    (the other side's messages after that side's read mark) and ``last_message_id``."""
    from django.db.models import Max

    return (
        ChatSession.objects.filter(Q(customer_id=customer_id) | Q(teacher__customer_id=customer_id))
        .select_related("teacher", "customer", "order")
        .annotate(
            unread_as_customer=Count(
                "messages", filter=Q(messages__sender=Side.TEACHER, messages__id__gt=F("customer_last_read_id"))
            ),
            unread_as_teacher=Count(
                "messages", filter=Q(messages__sender=Side.CUSTOMER, messages__id__gt=F("teacher_last_read_id"))
            ),
            last_message_id=Max("messages__id"),
        )
        .order_by(F("last_message_at").desc(nulls_last=True), "-id")
    )


def messages_by_id(ids: list[int]) -> dict[int, ChatMessage]:
    """Messages keyed by id (one query for a page of sessions' last messages)."""
    return {m.pk: m for m in ChatMessage.objects.filter(pk__in=[i for i in ids if i])}


def message_list(*, session_id: int, before: int | None = None) -> QuerySet[ChatMessage]:
    """The session's messages, newest first; ``before``: only ids below it (older history)."""
    qs = ChatMessage.objects.filter(session_id=session_id).order_by("-id")
    if before is not None:
        qs = qs.filter(pk__lt=before)
    return qs


def unread_count(*, session: ChatSession, side: str) -> int:
    """Messages of the other side that ``side`` has not read yet."""
    mark = session.customer_last_read_id if side == Side.CUSTOMER else session.teacher_last_read_id
    other = Side.TEACHER if side == Side.CUSTOMER else Side.CUSTOMER
    return ChatMessage.objects.filter(session_id=session.pk, sender=other, pk__gt=mark).count()
