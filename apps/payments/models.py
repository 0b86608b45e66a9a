"""Payments (WeChat Pay V2 or balance) and the log of every notification received."""

from django.db import models


class PaymentStatus(models.TextChoices):
    PENDING = "pending", "待支付"  # prepay made (or about to be); customer has not paid
    PAID = "paid", "已支付"  # WeChat confirmed (notification or orderquery) / balance taken
    CLOSED = "closed", "已关闭"  # closed at WeChat (order cancelled); cannot be paid any more
    UNKNOWN = "unknown", "状态未知"  # a WeChat call timed out: query before doing anything else
    MANUAL = "manual", "人工处理"  # checks ran out; staff decide


class Payment(models.Model):
    """One payment attempt of an order. ``out_trade_no`` (UNIQUE) is what WeChat knows.

    ``transaction_id`` (WeChat's number, UNIQUE when set) makes a notification applied once.
    """

    order = models.ForeignKey("orders.Order", on_delete=models.PROTECT, related_name="payments")
    method = models.CharField(max_length=16)  # orders.PayMethod
    out_trade_no = models.CharField(max_length=32, unique=True, null=True, blank=True)  # WeChat only
    total_fee = models.PositiveIntegerField()  # fen, WeChat's total_fee
    status = models.CharField(max_length=16, choices=PaymentStatus.choices, default=PaymentStatus.PENDING)
    prepay_id = models.CharField(max_length=64, blank=True)
    prepay_expires_at = models.DateTimeField(null=True, blank=True)  # WeChat: prepay_id valid 2 h
    transaction_id = models.CharField(max_length=32, null=True, blank=True, unique=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return self.out_trade_no


class Notification(models.Model):
    """Every payment notification received, raw, with what we did about it (audit trail)."""

    class Outcome(models.TextChoices):
        APPLIED = "applied", "已入账"  # order moved unpaid -> paid
        DUPLICATE = "duplicate", "重复通知"  # already applied with this transaction_id
        LATE = "late", "订单已取消"  # paid after the order was cancelled: refund needed
        BAD_SIGNATURE = "bad_signature", "签名错误"
        BAD_FIELDS = "bad_fields", "字段不符"  # appid / mch_id / result_code wrong
        AMOUNT_MISMATCH = "amount_mismatch", "金额不符"
        UNKNOWN_ORDER = "unknown_order", "未知订单"
        MALFORMED = "malformed", "无法解析"

    out_trade_no = models.CharField(max_length=32, blank=True, db_index=True)
    transaction_id = models.CharField(max_length=32, blank=True)
    total_fee = models.IntegerField(null=True, blank=True)  # fen, as received
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    body = models.TextField()  # the raw XML (truncated to 20 000 characters)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.out_trade_no} {self.outcome}"
