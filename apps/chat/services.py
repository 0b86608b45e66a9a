"""The chat's writes: who may use a session, sending a message, read receipts, opening a
session for a paid consultation, and the offline notices.

A message is validated, rate-limited, then INSERTed (its own transaction) and only then fanned
out over the channel layer group ``chat.<session id>``: what a socket shows is always in the
database, and a client that reconnects reads what it missed with ``messages?before=``. The
socket (``apps.chat.consumers``) and the HTTP POST call the same :func:`message_send`.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass
from functools import partial

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.appointments import selectors as booking_selectors
from apps.chat import frames, presence
from apps.chat.exceptions import ChatThrottled, Forbidden
from apps.chat.media import message_upload, voice_seconds
from apps.chat.models import ChatMessage, ChatNotice, ChatSession, ContentType, Side
from apps.orders.models import Order, OrderStatus
from starmall import dispatch
from starmall.errors import InvalidInput, InvalidState, NotFound

logger = logging.getLogger(__name__)

TEXT_MAX_CHARS = 1000
# A consultation cancelled, or whose full refund was approved (refunding never goes back) or
# arrived, will not take place: its chat takes no new messages. History stays readable.
CLOSED_ORDER_STATUSES = (OrderStatus.CANCELLED, OrderStatus.REFUNDING, OrderStatus.REFUNDED)


def group_name(session_id: int) -> str:
    """The channel-layer group every socket of the session listens on."""
    return f"chat.{session_id}"


def other_side(side: str) -> str:
    return Side.TEACHER if side == Side.CUSTOMER else Side.CUSTOMER


@dataclass(frozen=True)
class Participant:
    """The caller in a session: ``side`` is ``customer`` or ``teacher``."""

    session: ChatSession
    side: str
    customer_id: int


def participant(*, session_id: int, customer_id: int) -> Participant:
    """The caller's side in the session; NotFound (no such session) or Forbidden (someone else's).

    The customer is the one who paid; the teacher is the customer linked to the session's
    teacher (``Teacher.customer``).
    """
    session = ChatSession.objects.select_related("teacher", "order").filter(pk=session_id).first()
    if session is None:
        raise NotFound("会话不存在。", session_id=session_id)
    if session.customer_id == customer_id:
        return Participant(session=session, side=Side.CUSTOMER, customer_id=customer_id)
    if session.teacher.customer_id is not None and session.teacher.customer_id == customer_id:
        return Participant(session=session, side=Side.TEACHER, customer_id=customer_id)
    raise Forbidden("这不是你的会话。", session_id=session_id)


def session_is_closed(session: ChatSession) -> bool:
    """True when the session's consultation was cancelled or refunded (its order's status is in
    :data:`CLOSED_ORDER_STATUSES`; ``session.order`` is read, select it with the session).

    Decided from the order, the one record of the consultation's state (a cancelled or refunded
    booking is released with its order): no copy on the session to keep in step, and a refund
    approved a moment ago closes the chat for the very next message.
    """
    return session.order.status in CLOSED_ORDER_STATUSES


def session_open_check(session: ChatSession) -> None:
    """InvalidState (409 ``invalid_state``, ``detail.status`` the order's) when the session is
    closed (:func:`session_is_closed`): no new messages, history stays readable."""
    if session_is_closed(session):
        raise InvalidState("该咨询已取消或退款，会话已关闭，不能再发送消息。", status=session.order.status)


def message_validate(*, content_type, content, uploader_id: int) -> tuple[int, str, int | None]:
    """Check a message of customer ``uploader_id``; returns ``(content_type, content, duration)``
    or raises InvalidInput.

    1 text: 1..1,000 characters; 3 image: ``content`` the URL of an image the sender uploaded;
    2 voice: the URL of an audio file the sender uploaded (:func:`apps.chat.media.message_upload`)
    and its duration — read from the file at upload, 1..60 seconds — is the message's.
    """
    if isinstance(content_type, bool) or content_type not in ContentType.values:
        raise InvalidInput(content_type=["消息类型必须是 1（文字）、2（语音）或 3（图片）"])
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput(content=["消息内容不能为空"])
    if "\x00" in content:
        raise InvalidInput(content=["消息内容含有非法字符"])
    if content_type == ContentType.TEXT:
        if len(content) > TEXT_MAX_CHARS:
            raise InvalidInput(content=[f"文字消息最多 {TEXT_MAX_CHARS} 个字"])
        return content_type, content, None
    upload = message_upload(url=content, uploader_id=uploader_id, content_type=content_type)
    if content_type == ContentType.IMAGE:
        return content_type, content, None
    return content_type, content, voice_seconds(upload)


def _rate_check(customer_id: int) -> None:
    """At most ``CHAT_MESSAGES_PER_MINUTE`` messages per user per clock minute (socket and HTTP
    together, counted in Redis so every process sees the same count); else ChatThrottled."""
    now = time.time()
    key = f"chat:rate:{customer_id}:{int(now // 60)}"
    cache.add(key, 0, timeout=120)
    if cache.incr(key) > settings.CHAT_MESSAGES_PER_MINUTE:
        raise ChatThrottled(retry_after_seconds=60 - int(now) % 60)


def message_send(
    *, session_id: int, customer_id: int, content_type, content, duration=None, fanout: bool = True
) -> ChatMessage:
    """Send a message as the caller: validate, rate-limit, store, then (``fanout``) deliver.

    Raises NotFound / Forbidden (not the caller's session), InvalidState (the consultation was
    cancelled or refunded: :func:`session_open_check`), InvalidInput, ChatThrottled. The row
    and the session's ``last_message_at`` commit first (read marks move only by read receipts).
    When the other side has no live socket, a ChatNotice row (UNIQUE per quiet period) is
    written in the same transaction and sent after commit. ``fanout=False``: the caller (the
    socket consumer, which is async) sends the frame itself. ``duration`` is ignored: a voice
    message's duration is the one read from its upload (clients may still send theirs).
    """
    who = participant(session_id=session_id, customer_id=customer_id)
    session_open_check(who.session)
    content_type, content, duration = message_validate(
        content_type=content_type, content=content, uploader_id=customer_id
    )
    _rate_check(customer_id)
    with transaction.atomic():
        message = ChatMessage.objects.create(
            session_id=session_id, sender=who.side, content_type=content_type, content=content, duration=duration
        )
        ChatSession.objects.filter(pk=session_id).update(last_message_at=message.created_at)
        recipient = other_side(who.side)
        if not _online(session_id, recipient):
            notice_record(session_id=session_id, recipient=recipient, at=message.created_at)
    if fanout:
        fanout_message(message)
    return message


def _online(session_id: int, side: str) -> bool:
    try:
        return presence.is_online(session_id=session_id, side=side)
    except Exception:  # noqa: BLE001 - presence unknown: notify rather than stay silent
        logger.warning("chat presence unavailable; treating %s of session %s as offline", side, session_id)
        return False


def _group_send(session_id: int, event: dict) -> None:
    """Deliver ``event`` to the session's sockets from sync code; a layer that is down only
    loses the live push (the row is stored: clients read it over HTTP)."""
    try:
        async_to_sync(get_channel_layer().group_send)(group_name(session_id), event)
    except Exception:  # noqa: BLE001 - Redis down: the message is safe in the database
        logger.warning("chat fan-out to session %s failed", session_id, exc_info=True)


def fanout_message(message: ChatMessage) -> None:
    """Push a stored message to every socket of its session."""
    _group_send(message.session_id, {"type": "chat.message", "frame": frames.message_frame(message)})


def messages_mark_read(*, session_id: int, customer_id: int, up_to: int, fanout: bool = True) -> int:
    """The caller has read the session's messages up to id ``up_to``; returns the id recorded.

    ``up_to`` is lowered to the newest message of the session at or below it; the read mark
    only moves forward (conditional UPDATE ``WHERE <side>_last_read_id < up_to``). When it
    moved, ``{"type": "read", "up_to", "by"}`` goes to the session's sockets.
    """
    who = participant(session_id=session_id, customer_id=customer_id)
    newest = (
        ChatMessage.objects.filter(session_id=session_id, pk__lte=up_to)
        .order_by("-id")
        .values_list("pk", flat=True)
        .first()
    ) or 0
    field = f"{who.side}_last_read_id"
    moved = ChatSession.objects.filter(pk=session_id, **{f"{field}__lt": newest}).update(**{field: newest})
    if moved and fanout:
        _group_send(session_id, {"type": "chat.read", "frame": frames.read_frame(up_to=newest, by=who.side)})
    return newest


# --- opening a session ---------------------------------------------------------------------


@transaction.atomic(savepoint=False)
def chat_session_open(*, order: Order) -> ChatSession:
    """The chat of a paid consultation order, created once (UNIQUE ``order``): a second call
    returns the same session. The teacher is the teacher of the order's booking (live or not:
    a consultation refunded meanwhile still gets its closed session). Joins the caller's
    transaction (the follow-up's). InvalidState when the order booked nothing."""
    existing = ChatSession.objects.filter(order_id=order.pk).first()
    if existing is not None:
        return existing
    booking = booking_selectors.booking_of(order.order_no, live=False)
    if booking is None:
        raise InvalidState("该订单没有预约，不能开启咨询会话。", order_no=order.order_no)
    teacher_id = booking.teacher_id
    try:
        with transaction.atomic():
            return ChatSession.objects.create(order=order, customer_id=order.customer_id, teacher_id=teacher_id)
    except IntegrityError:  # a concurrent run opened it
        return ChatSession.objects.get(order_id=order.pk)


def followup_chat_open(followup) -> None:
    """Outbox handler for ``FollowUp.Kind.CHAT_OPEN`` (recorded by the paying transaction):
    opens the session of an order that booked a teacher's time; nothing for one that did not."""
    if booking_selectors.booking_of(followup.order.order_no, live=False) is not None:
        chat_session_open(order=followup.order)


# --- offline notices -------------------------------------------------------------------------


def _period(at: dt.datetime) -> int:
    minute = int(at.timestamp() // 60)
    return minute - minute % settings.CHAT_NOTICE_QUIET_MINUTES


@transaction.atomic(savepoint=False)
def notice_record(*, session_id: int, recipient: str, at: dt.datetime) -> ChatNotice | None:
    """One notice to ``recipient`` for the quiet period containing ``at``; None when this period
    already has one (UNIQUE). Sent after commit; :func:`notices_resend` covers a lost push."""
    try:
        with transaction.atomic():
            notice = ChatNotice.objects.create(session_id=session_id, recipient=recipient, period=_period(at))
    except IntegrityError:
        return None
    transaction.on_commit(partial(_notice_push, notice.pk))
    return notice


def _notice_push(notice_id: int) -> None:
    from apps.chat.tasks import chat_notice_send

    dispatch.push(chat_notice_send, notice_id)


def notice_send(*, notice_id: int) -> str:
    """Send one pending notice as a WeChat subscription message; returns its status after.

    Claimed by a conditional UPDATE (attempts + 1 while pending and under MAX): two deliveries
    of the task both may send (WeChat has no idempotency key: at least once, README "Limits"),
    but a sent row is never sent again. A teacher without a WeChat user cannot be told: FAILED.
    """
    from django.db.models import F

    from apps.accounts import subscriptions

    claimed = ChatNotice.objects.filter(
        pk=notice_id, status=ChatNotice.Status.PENDING, attempts__lt=NOTICE_MAX_ATTEMPTS
    ).update(attempts=F("attempts") + 1)
    notice = (
        ChatNotice.objects.select_related("session__customer", "session__teacher__customer", "session__order")
        .filter(pk=notice_id)
        .first()
    )
    if notice is None or claimed != 1:
        return notice.status if notice else "missing"
    session = notice.session
    person = session.customer if notice.recipient == Side.CUSTOMER else session.teacher.customer
    if person is None:
        ChatNotice.objects.filter(pk=notice_id).update(
            status=ChatNotice.Status.FAILED, last_error="teacher has no WeChat user"
        )
        return ChatNotice.Status.FAILED
    sender = session.teacher.name if notice.recipient == Side.CUSTOMER else session.customer.nickname
    try:
        outcome = subscriptions.subscribe_send(
            customer=person,
            kind=subscriptions.Kind.CHAT_MESSAGE,
            page=f"pages/chat/session?id={session.pk}",
            values={"sender": (sender or "对方")[:20], "note": "您有新的咨询消息", "order_no": session.order.order_no},
        )
    except Exception as exc:  # noqa: BLE001 - recorded; the sweep retries until MAX attempts
        status = ChatNotice.Status.FAILED if notice.attempts >= NOTICE_MAX_ATTEMPTS else ChatNotice.Status.PENDING
        ChatNotice.objects.filter(pk=notice_id, status=ChatNotice.Status.PENDING).update(
            status=status, last_error=f"{type(exc).__name__}: {exc}"[:500]
        )
        return status
    if outcome != subscriptions.SENT:  # switched off, or refused (43101): not retried
        ChatNotice.objects.filter(pk=notice_id, status=ChatNotice.Status.PENDING).update(
            status=ChatNotice.Status.FAILED, last_error=f"subscription message {outcome}"
        )
        return ChatNotice.Status.FAILED
    ChatNotice.objects.filter(pk=notice_id, status=ChatNotice.Status.PENDING).update(
        status=ChatNotice.Status.SENT, sent_at=timezone.now()
    )
    return ChatNotice.Status.SENT


NOTICE_MAX_ATTEMPTS = 5


def notices_resend(*, now: dt.datetime | None = None) -> int:
    """Beat: push again the notices still pending a minute after they were written."""
    now = now or timezone.now()
    ids = list(
        ChatNotice.objects.filter(
            status=ChatNotice.Status.PENDING, created_at__lt=now - dt.timedelta(minutes=1)
        ).values_list("pk", flat=True)[:200]
    )
    for pk in ids:
        _notice_push(pk)
    return len(ids)
