"""Consultation chat: one session per paid consultation order, its messages, offline notices.

A message is a row BEFORE anyone sees it (the socket and the HTTP POST both write it, then fan it
out over the channel layer); a client that reconnects reads what it missed from these rows.
"""

from django.db import models
from django.db.models import Q

from apps.orders.models import Order


class Side(models.TextChoices):
    CUSTOMER = "customer", "顾客"  # the customer who paid the consultation
    TEACHER = "teacher", "老师"  # the consultation's teacher (catalog.Teacher.customer)


class ContentType(models.IntegerChoices):
    TEXT = 1, "文字"  # content: up to CHAT_TEXT_MAX_CHARS characters
    VOICE = 2, "语音"  # content: the sender's own audio upload's URL; duration 1..60 s, read from the file
    IMAGE = 3, "图片"  # content: the sender's own image upload's URL


class ChatSession(models.Model):
    """The chat of one paid consultation: its customer and its teacher.

    UNIQUE ``order`` makes opening idempotent (the paid follow-up may run twice). The
    ``*_last_read_id`` fields are the id of the newest message each side has read (0: none);
    unread = the other side's messages with a larger id. ``last_message_at`` orders the list.
    """

    order = models.OneToOneField(
        "orders.Order", verbose_name="订单", on_delete=models.PROTECT, related_name="chat_session"
    )
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="chat_sessions"
    )
    teacher = models.ForeignKey(
        "catalog.Teacher", verbose_name="老师", on_delete=models.PROTECT, related_name="chat_sessions"
    )
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    last_message_at = models.DateTimeField(verbose_name="最新消息时间", null=True, blank=True)
    customer_last_read_id = models.BigIntegerField(
        verbose_name="顾客已读至（消息 ID）", default=0
    )  # newest message id the customer read
    teacher_last_read_id = models.BigIntegerField(
        verbose_name="老师已读至（消息 ID）", default=0
    )  # newest message id the teacher read

    class Meta:
        verbose_name = "咨询会话"
        verbose_name_plural = "咨询会话"
        ordering = ["-last_message_at", "-id"]
        indexes = [
            models.Index(fields=["customer", "-last_message_at"], name="chat_session_customer_idx"),
            models.Index(fields=["teacher", "-last_message_at"], name="chat_session_teacher_idx"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.order_id}"


class ChatMessage(models.Model):
    """One message, append-only. ``duration`` in seconds (voice only)."""

    session = models.ForeignKey(ChatSession, verbose_name="会话", on_delete=models.PROTECT, related_name="messages")
    sender = models.CharField(verbose_name="发送方", max_length=16, choices=Side.choices)
    content_type = models.PositiveSmallIntegerField(verbose_name="消息类型", choices=ContentType.choices)
    content = models.TextField(verbose_name="内容")
    duration = models.PositiveSmallIntegerField(verbose_name="时长（秒）", null=True, blank=True)  # seconds, voice only
    created_at = models.DateTimeField(verbose_name="发送时间", auto_now_add=True)

    class Meta:
        verbose_name = "聊天消息"
        verbose_name_plural = "聊天消息"
        ordering = ["-id"]
        indexes = [models.Index(fields=["session", "-id"], name="chat_message_session_idx")]
        constraints = [
            models.CheckConstraint(
                condition=(Q(content_type=2, duration__gte=1, duration__lte=60) | ~Q(content_type=2)),
                name="chat_voice_duration_1_60",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}/{self.pk} {self.sender}"


class ChatNotice(models.Model):
    """Outbox: one "new chat message" subscription message to an offline side per quiet period.

    UNIQUE (session, recipient, period): however many messages arrive while the recipient is
    away, one row per period (``period`` = start of the CHAT_NOTICE_QUIET_MINUTES window, as a
    Unix minute) and so one message. Sent after commit by a task; beat re-sends rows left pending.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "待发送"  # waiting for the worker
        SENT = "sent", "已发送"  # WeChat accepted it
        FAILED = "failed", "失败"  # WeChat refused (e.g. no subscription); see last_error

    session = models.ForeignKey(ChatSession, verbose_name="会话", on_delete=models.CASCADE, related_name="notices")
    recipient = models.CharField(verbose_name="接收方", max_length=16, choices=Side.choices)
    period = models.BigIntegerField(verbose_name="静默时段（Unix 分钟）")  # Unix minute where the quiet period starts
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(verbose_name="尝试次数", default=0)
    last_error = models.CharField(verbose_name="最近错误", max_length=500, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    sent_at = models.DateTimeField(verbose_name="发送时间", null=True, blank=True)

    class Meta:
        verbose_name = "离线消息提醒"
        verbose_name_plural = "离线消息提醒"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "recipient", "period"], name="chat_notice_once_per_period"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id} -> {self.recipient} @{self.period}"


class ConsultationReminder(models.Model):
    """Outbox: one reminder (subscription message) ``hours`` before a paid consultation's slot.

    UNIQUE (order, hours, slot_start): beat may scan twice, the row is written once; a moved
    booking has a new ``slot_start`` and so gets its own reminders, while the old time's rows are
    skipped when their turn comes (the order's slot no longer starts then). A worker that dies
    mid-send leaves a lease that expires (``locked_until``), and the next scan pushes it again.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "待发送"  # due, waiting for a worker
        SENT = "sent", "已发送"  # WeChat accepted it
        SKIPPED = "skipped", "已跳过"  # cancelled, refunded or moved meanwhile: nothing sent
        FAILED = "failed", "失败"  # WeChat refused MAX_ATTEMPTS times; see last_error

    MAX_ATTEMPTS = 5
    LEASE_SECONDS = 120

    order = models.ForeignKey("orders.Order", verbose_name="订单", on_delete=models.CASCADE, related_name="reminders")
    hours = models.PositiveSmallIntegerField(verbose_name="提前小时数")  # one of REMINDER_HOURS
    slot_start = models.DateTimeField(verbose_name="时段开始")  # the slot's start this reminder is for
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(verbose_name="尝试次数", default=0)
    locked_until = models.DateTimeField(verbose_name="锁定至", null=True, blank=True)
    last_error = models.CharField(verbose_name="最近错误", max_length=500, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    sent_at = models.DateTimeField(verbose_name="发送时间", null=True, blank=True)

    class Meta:
        verbose_name = "咨询提醒"
        verbose_name_plural = "咨询提醒"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["order", "hours", "slot_start"], name="reminder_once_per_slot_start"),
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="reminder_status_idx")]

    def __str__(self) -> str:
        return f"{self.order_id} -{self.hours}h"


class ConsultationManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(kind="consultation", slot__isnull=False)


class Consultation(Order):
    """A consultation order as the back office moves it (proxy: no table of its own)."""

    objects = ConsultationManager()

    class Meta:
        proxy = True
        verbose_name = "咨询预约订单"
        verbose_name_plural = "咨询预约订单"
