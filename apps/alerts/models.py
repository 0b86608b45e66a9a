"""An alert is one problem staff must hear about (a MANUAL payment, a FAILED refund or follow-up,
a reconciliation difference), recorded once under a UNIQUE ``key`` and delivered to every
configured backend (``settings.ALERT_BACKENDS``), each delivery tracked in :class:`AlertDelivery`.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Alert(models.Model):
    """One problem, once: a second raise of the same ``key`` changes nothing and sends nothing."""

    class Kind(models.TextChoices):
        PAYMENT_MANUAL = "payment_manual", "支付待人工处理"
        REFUND_FAILED = "refund_failed", "退款失败"
        FOLLOWUP_FAILED = "followup_failed", "后续任务失败"
        REMINDER_FAILED = "reminder_failed", "咨询提醒失败"
        RECONCILIATION = "reconciliation", "对账异常"
        PICKUP_VERIFY_FAILURES = "pickup_verify_failures", "核销码输错过多"

    class Status(models.TextChoices):
        PENDING = "pending", "待发送"  # some backend has not delivered it yet; retried with back-off
        SENT = "sent", "已发送"  # every backend delivered it
        FAILED = "failed", "发送失败"  # MAX_ATTEMPTS used up; the error is kept here

    key = models.CharField(
        "告警键",
        max_length=200,
        unique=True,
        help_text="每个问题一个，例如 refund:<退款单号>:failed；同一问题只记录、发送一次",
    )
    kind = models.CharField("类型", max_length=32, choices=Kind.choices)
    title = models.CharField("标题", max_length=200)
    text = models.TextField("内容")
    status = models.CharField("发送状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField("发生时间", default=timezone.now, db_index=True)
    sent_at = models.DateTimeField("发送完成时间", null=True, blank=True)
    attempts = models.PositiveIntegerField("发送次数", default=0)
    # When beat's sweep may (re)try it; the first try is the task queued at commit.
    next_attempt_at = models.DateTimeField("下次重试时间", null=True, blank=True)
    locked_until = models.DateTimeField("发送中（租约至）", null=True, blank=True)
    last_error = models.TextField("最近错误", blank=True)
    resolved_at = models.DateTimeField("处理时间", null=True, blank=True)
    resolved_by = models.CharField("处理人", max_length=150, blank=True)

    class Meta:
        verbose_name = "告警"
        verbose_name_plural = "告警"
        ordering = ["-id"]
        permissions = [("resolve_alert", "可以把告警标记为已处理")]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="alert_status_next_idx"),
            models.Index(fields=["resolved_at"], name="alert_resolved_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}：{self.title}"


class AlertDelivery(models.Model):
    """One backend's delivery of one alert: delivered once, its failed attempts counted."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries", verbose_name="告警")
    backend = models.CharField("发送渠道", max_length=200)  # the dotted path in ALERT_BACKENDS
    delivered_at = models.DateTimeField("送达时间", null=True, blank=True)
    attempts = models.PositiveIntegerField("尝试次数", default=0)
    last_attempt_at = models.DateTimeField("最近尝试时间", null=True, blank=True)
    last_error = models.TextField("最近错误", blank=True)

    class Meta:
        verbose_name = "告警发送记录"
        verbose_name_plural = "告警发送记录"
        ordering = ["alert_id", "id"]
        constraints = [models.UniqueConstraint(fields=["alert", "backend"], name="alert_delivery_once_per_backend")]
        indexes = [models.Index(fields=["backend", "delivered_at"], name="alert_delivery_backend_idx")]

    def __str__(self) -> str:
        return f"{self.alert_id} -> {self.backend}"
