"""Payments (WeChat Pay V2 or balance), refunds, notifications received, reconciliation runs."""

import datetime as dt
import re

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from apps.orders.models import PayMethod
from starmall.querysets import AutoNowQuerySet


class PaymentStatus(models.TextChoices):
    PENDING = "pending", "待支付"  # prepay made (or about to be); customer has not paid
    PAID = "paid", "已支付"  # WeChat confirmed (notification or orderquery) / balance taken
    CLOSED = "closed", "已关闭"  # closed at WeChat (order cancelled); cannot be paid any more
    UNKNOWN = "unknown", "状态未知"  # a WeChat call timed out: query before doing anything else
    MANUAL = "manual", "人工处理"  # checks ran out; staff decide


class PayApi(models.TextChoices):
    """The WeChat Pay API a payment (or recharge) was made with (``apps/payments/gateway.py``)."""

    V2 = "v2", "v2 接口"
    V3 = "v3", "v3 接口"


class Payment(models.Model):
    """One payment attempt of an order. ``out_trade_no`` (UNIQUE) is what WeChat knows.

    ``transaction_id`` (WeChat's number, UNIQUE when set) makes a notification applied once.
    """

    order = models.ForeignKey("orders.Order", verbose_name="订单", on_delete=models.PROTECT, related_name="payments")
    method = models.CharField(verbose_name="支付方式", max_length=16, choices=PayMethod.choices)
    out_trade_no = models.CharField(
        verbose_name="商户订单号", max_length=32, unique=True, null=True, blank=True
    )  # WeChat only
    total_fee = models.PositiveIntegerField(
        verbose_name="支付金额", help_text="微信的 total_fee"
    )  # fen, WeChat's total_fee
    refunded_fen = models.PositiveIntegerField(verbose_name="已退", default=0)  # fen committed to refunds (reserved)
    status = models.CharField(
        verbose_name="状态", max_length=16, choices=PaymentStatus.choices, default=PaymentStatus.PENDING
    )
    prepay_id = models.CharField(verbose_name="预支付标识", max_length=64, blank=True)
    prepay_expires_at = models.DateTimeField(
        verbose_name="预支付过期时间", null=True, blank=True
    )  # WeChat: prepay_id valid 2 h
    transaction_id = models.CharField(
        verbose_name="微信支付单号",
        help_text="微信的 transaction_id",
        max_length=32,
        null=True,
        blank=True,
        unique=True,
    )
    paid_at = models.DateTimeField(verbose_name="支付时间", null=True, blank=True)
    # The WeChat Pay API it was made with (WECHAT_PAY_API then); its queries, close and refunds use it.
    api = models.CharField(verbose_name="支付接口", max_length=2, choices=PayApi.choices, default=PayApi.V2)
    # Payment uncertainty (DESIGN.md flow 8): checks made while UNKNOWN and when the next is due.
    checks = models.PositiveSmallIntegerField(verbose_name="查询次数", default=0)
    next_check_at = models.DateTimeField(verbose_name="下次查询", null=True, blank=True)
    # When GET pay-status last asked WeChat (orderquery) about this payment (claim_status_query).
    status_queried_at = models.DateTimeField(verbose_name="最近查单", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)

    objects = AutoNowQuerySet.as_manager()

    class Meta:
        verbose_name = "支付"
        verbose_name_plural = "支付"
        ordering = ["-id"]
        permissions = [("resolve_payment", "可以处理状态未知 / 人工处理的支付（向微信查询）")]
        # The few uncertain payments: the per-minute check and the to-do count, without reading them all.
        indexes = [
            models.Index(
                fields=["status", "next_check_at"],
                name="payment_uncertain_idx",
                condition=models.Q(status__in=["unknown", "manual"]),
            )
        ]
        constraints = [
            # The sum of refunds never exceeds what was paid (WECHAT.md: sum <= total_fee).
            models.CheckConstraint(
                condition=models.Q(refunded_fen__lte=models.F("total_fee")), name="payment_refunded_lte_total"
            ),
        ]

    def __str__(self) -> str:
        return self.out_trade_no or f"balance:{self.order_id}"

    @classmethod
    def claim_status_query(cls, pk: int) -> bool:
        """True if the caller may ask WeChat about this payment now (GET pay-status).

        At most one orderquery per payment per ``PAY_STATUS_QUERY_INTERVAL_SECONDS``: a
        conditional UPDATE of ``status_queried_at`` whose row count says who won, so it holds
        across processes and needs no Redis (a cache ``add`` would let every request query
        while Redis is down). Losers answer from the database.
        """
        now = timezone.now()
        due = models.Q(status_queried_at__isnull=True) | models.Q(
            status_queried_at__lte=now - dt.timedelta(seconds=settings.PAY_STATUS_QUERY_INTERVAL_SECONDS)
        )
        return cls.objects.filter(due, pk=pk).update(status_queried_at=now) == 1


class Notification(models.Model):
    """Every payment, refund or merchant-transfer notification received, raw, with what we did
    about it (audit). A transfer's ``out_bill_no`` is kept in ``out_trade_no`` (our number),
    its ``transfer_amount`` in ``total_fee``."""

    class Kind(models.TextChoices):
        PAYMENT = "payment", "支付通知"
        REFUND = "refund", "退款通知"
        TRANSFER = "transfer", "商家转账通知"  # v3 MCHTRANSFER.BILL.FINISHED (withdrawals)

    class Outcome(models.TextChoices):
        APPLIED = "applied", "已处理"  # order unpaid -> paid / refund confirmed
        DUPLICATE = "duplicate", "重复通知"  # applied before: nothing done
        LATE = "late", "订单已取消"  # paid after the order was cancelled: refund queued
        REFUND_CLOSED = "refund_closed", "退款关闭"  # WeChat says CHANGE / REFUNDCLOSE: refund FAILED
        BAD_SIGNATURE = "bad_signature", "签名错误"
        BAD_FIELDS = "bad_fields", "字段不符"  # appid / mch_id / result_code wrong
        AMOUNT_MISMATCH = "amount_mismatch", "金额不符"
        UNKNOWN_ORDER = "unknown_order", "未知订单"  # out_trade_no / out_refund_no not ours
        MALFORMED = "malformed", "无法解析"

    kind = models.CharField(verbose_name="类型", max_length=16, choices=Kind.choices, default=Kind.PAYMENT)
    out_trade_no = models.CharField(verbose_name="商户订单号", max_length=32, blank=True, db_index=True)
    out_refund_no = models.CharField(verbose_name="退款单号", max_length=64, blank=True)
    transaction_id = models.CharField(
        verbose_name="微信支付单号", help_text="微信的 transaction_id", max_length=32, blank=True
    )
    total_fee = models.IntegerField(
        verbose_name="金额", help_text="通知中的 total_fee（退款通知为 refund_fee）", null=True, blank=True
    )  # fen as received (refund_fee for refunds)
    outcome = models.CharField(verbose_name="处理结果", max_length=20, choices=Outcome.choices)
    body = models.TextField(verbose_name="原文")  # the raw XML (truncated to 20 000 characters; refunds: decrypted)
    # When WeChat's delivery arrived: the write's moment, or the gate's for a delivery it answered
    # and left to beat or the worker (notify_duplicates, notify_queue).
    received_at = models.DateTimeField(verbose_name="收到时间", default=timezone.now)

    class Meta:
        verbose_name = "微信通知"
        verbose_name_plural = "微信通知"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.out_refund_no or self.out_trade_no} {self.outcome}"

    # Not from WeChat as far as we can tell (no valid signature, cannot be parsed or decrypted):
    # counted per day, only a bounded sample is kept (InvalidNotificationDay).
    INVALID = (Outcome.BAD_SIGNATURE, Outcome.MALFORMED)

    @classmethod
    def record_payment(cls, body: bytes | str, fields: dict, outcome: str) -> "Notification | None":
        """:meth:`record` for a payment notification (orders and recharges share its URL)."""
        return cls.record(kind=cls.Kind.PAYMENT, body=body, fields=fields, outcome=outcome)

    @classmethod
    def record(
        cls, *, kind: str, body: bytes | str, fields: dict, outcome: str, received_at: dt.datetime | None = None
    ) -> "Notification | None":
        """Store one received notification; ``fields`` as parsed (may be empty); ``received_at``
        (aware) when it arrived earlier than now (a delivery the notify gate queued).

        Invalid ones (``INVALID``) are counted instead, and stored only while the day's count
        is within ``INVALID_NOTIFICATION_SAMPLES``, with the body cut to
        ``INVALID_NOTIFICATION_SAMPLE_CHARS``; returns None when not stored.
        """
        limit = 20000
        if outcome in cls.INVALID:
            if InvalidNotificationDay.count_one(kind=kind) > settings.INVALID_NOTIFICATION_SAMPLES:
                return None
            limit = settings.INVALID_NOTIFICATION_SAMPLE_CHARS
        row = cls.build(kind=kind, body=body, fields=fields, outcome=outcome, limit=limit, received_at=received_at)
        row.save(force_insert=True)
        return row

    @classmethod
    def build(
        cls,
        *,
        kind: str,
        body: bytes | str,
        fields: dict,
        outcome: str,
        limit: int = 20000,
        received_at: dt.datetime | None = None,
    ) -> "Notification":
        """The unsaved row :meth:`record` stores: ``body`` cut to ``limit`` characters, our
        number, WeChat's number and amount (fen) taken from ``fields``. Also used for the
        duplicates the ASGI gate answered, written in bulk (``apps.payments.notify_duplicates``)."""

        def text(value, limit: int) -> str:
            # Whatever arrived is kept, but PostgreSQL text cannot hold NUL.
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            return str(value or "").replace("\x00", "\ufffd")[:limit]

        amount_field = {cls.Kind.REFUND: "refund_fee", cls.Kind.TRANSFER: "transfer_amount"}.get(kind, "total_fee")
        amount = text(fields.get(amount_field), 20)
        return cls(
            kind=kind,
            outcome=outcome,
            body=text(body, limit),
            out_trade_no=text(fields.get("out_trade_no") or fields.get("out_bill_no"), 32),
            out_refund_no=text(fields.get("out_refund_no"), 64),
            transaction_id=text(fields.get("transaction_id"), 32),
            total_fee=int(amount) if re.fullmatch(r"[0-9]{1,9}", amount) else None,  # ASCII digits, fits
            received_at=received_at or timezone.now(),
        )


class QueuedNotification(models.Model):
    """A WeChat payment result's first delivery, answered SUCCESS by the notify gate and waiting
    for a worker to apply it (``apps.payments.notify_queue``). A Pay API v2 result (XML) or,
    with ``headers``, a Pay API v3 one (JSON; its ``Wechatpay-*`` headers kept to verify again).

    The gate writes one only for a signed result of a pending WeChat payment whose ``total_fee``
    equals ours, so the apply (``notifications.notification_handle`` on ``body``, exactly what
    Django's view runs) can only mark it paid, late or duplicate: SUCCESS, which WeChat already
    heard. UNIQUE(out_trade_no, transaction_id): re-sent copies do not queue twice. The row is
    deleted in the transaction that applies it and writes its audit row (``Notification``).
    """

    out_trade_no = models.CharField(verbose_name="商户订单号", max_length=32)
    transaction_id = models.CharField(verbose_name="微信支付单号", max_length=32)
    body = models.TextField(verbose_name="原文")  # the raw XML (v2) or JSON (v3) as received (UTF-8)
    # Pay API v3: the four Wechatpay-* headers ({name: value}) the body is signed in; {} for v2.
    headers = models.JSONField(verbose_name="签名头（API v3）", default=dict, blank=True)
    received_at = models.DateTimeField(verbose_name="收到时间", default=timezone.now, db_index=True)

    class Meta:
        verbose_name = "待处理的支付通知"
        verbose_name_plural = "待处理的支付通知"
        constraints = [
            models.UniqueConstraint(fields=["out_trade_no", "transaction_id"], name="payments_queued_notification_once")
        ]

    def __str__(self) -> str:
        return f"{self.out_trade_no} {self.transaction_id}"


class InvalidNotificationDay(models.Model):
    """How many invalid notifications (bad or no signature, unparsable, too large) arrived on a
    Shanghai day, per kind. Junk cannot fill the database: one row per day and kind, plus at
    most ``INVALID_NOTIFICATION_SAMPLES`` sample Notification rows a day."""

    day = models.DateField(verbose_name="日期")  # Asia/Shanghai
    kind = models.CharField(verbose_name="类型", max_length=16, choices=Notification.Kind.choices)
    count = models.PositiveIntegerField(verbose_name="次数", default=0)

    class Meta:
        verbose_name = "无效通知（按日）"
        verbose_name_plural = "无效通知（按日）"
        ordering = ["-day"]
        constraints = [models.UniqueConstraint(fields=["day", "kind"], name="invalid_notification_day_kind")]

    def __str__(self) -> str:
        return f"{self.day} {self.kind}: {self.count}"

    @classmethod
    @transaction.atomic(savepoint=False)
    def count_one(cls, *, kind: str) -> int:
        """Add one to today's count and return the new count (exact under concurrency: the
        conditional UPDATE holds the row until commit; the first of a day inserts, UNIQUE)."""
        day = timezone.localdate()
        rows = cls.objects.filter(day=day, kind=kind)
        if not rows.update(count=models.F("count") + 1):
            try:
                with transaction.atomic():
                    cls.objects.create(day=day, kind=kind, count=1)
                return 1
            except IntegrityError:  # another request inserted it first
                rows.update(count=models.F("count") + 1)
        return rows.values_list("count", flat=True).get()


class Refund(models.Model):
    """One refund of a payment, with its own UNIQUE ``out_refund_no`` (DESIGN.md flow 7).

    A worker claims it with a conditional UPDATE (pending -> processing), calls WeChat (or
    credits the balance) and retries with the SAME out_refund_no, so WeChat refunds it once.
    It refunds an order's ``payment`` or a member card purchase (no order): one of the two.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "待退款"  # waiting for (another) attempt at next_attempt_at
        PROCESSING = "processing", "提交中"  # a worker holds it (lease until next_attempt_at)
        SUBMITTED = "submitted", "退款中"  # WeChat accepted it; waiting for its notification
        SUCCESS = "success", "已退款"  # money returned (notification, refundquery or balance)
        FAILED = "failed", "失败"  # out of tries or refused: staff must look (last_error)

    class Reason(models.TextChoices):
        AFTER_SALE = "after_sale", "售后退款"
        LATE_PAYMENT = "late_payment", "订单已取消后到账"
        DUPLICATE_PAYMENT = "duplicate_payment", "重复支付"
        MEMBER_CARD = "member_card", "会员卡退款"  # staff refund a paid card (apps.payments.member_cards)

    MAX_ATTEMPTS = 3
    BACKOFF_SECONDS = (60, 300, 900)  # wait after the 1st, 2nd, 3rd failed try

    order = models.ForeignKey(
        "orders.Order", verbose_name="订单", null=True, blank=True, on_delete=models.PROTECT, related_name="refunds"
    )
    payment = models.ForeignKey(
        Payment, verbose_name="支付", null=True, blank=True, on_delete=models.PROTECT, related_name="refunds"
    )
    card_purchase = models.ForeignKey(
        "members.CardPurchase",
        verbose_name="会员卡购买",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="refunds",
    )
    after_sale = models.OneToOneField(
        "orders.AfterSale",
        verbose_name="退款申请",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="refund",
    )
    out_refund_no = models.CharField(verbose_name="退款单号", max_length=64, unique=True)
    refund_fen = models.PositiveIntegerField(verbose_name="退款金额")  # fen to return
    reason = models.CharField(verbose_name="原因", max_length=32, choices=Reason.choices)
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(verbose_name="尝试次数", default=0)
    next_attempt_at = models.DateTimeField(verbose_name="下次尝试", null=True, blank=True)
    refund_id = models.CharField(verbose_name="微信退款单号", max_length=64, blank=True)  # WeChat's number
    last_error = models.TextField(verbose_name="最近错误", blank=True)
    restock = models.BooleanField(verbose_name="退回库存", default=False)  # return stock and slot when it succeeds
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    succeeded_at = models.DateTimeField(verbose_name="退款成功时间", null=True, blank=True)

    class Meta:
        verbose_name = "退款"
        verbose_name_plural = "退款"
        ordering = ["-id"]
        permissions = [("retry_refund", "可以重试失败的退款")]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="refund_status_next_idx")]
        constraints = [
            # One late-payment / duplicate-payment refund per payment, however often it is noticed.
            models.UniqueConstraint(
                fields=["payment", "reason"],
                condition=~models.Q(reason="after_sale"),
                name="refund_once_per_payment_reason",
            ),
            models.CheckConstraint(  # an order's payment, or a card purchase (which has no order)
                condition=models.Q(order__isnull=False, payment__isnull=False, card_purchase__isnull=True)
                | models.Q(order__isnull=True, payment__isnull=True, card_purchase__isnull=False),
                name="refund_of_payment_or_card",
            ),
        ]

    def __str__(self) -> str:
        return self.out_refund_no

    @property
    def trade(self) -> tuple[str, int, str]:
        """The WeChat trade refunded, ``(out_trade_no, total_fee fen, api)``: the payment's or
        the card purchase's."""
        if self.payment_id:
            return self.payment.out_trade_no, self.payment.total_fee, self.payment.api
        return self.card_purchase.purchase_no, self.card_purchase.pay_fen, self.card_purchase.api


class ReconciliationRun(models.Model):
    """The comparison of one day's WeChat bill with local payments and refunds (one per day).

    ``differences``: list of ``{"kind", "out_trade_no", "out_refund_no", "wechat_fen",
    "local_fen", "wechat_status", "local_status"}``; kinds: missing_local, missing_wechat,
    amount, status. ``alerted`` flips once (conditional UPDATE) so a day alerts once.
    """

    class Status(models.TextChoices):
        OK = "ok", "一致"
        DIFFERENCES = "differences", "有差异"
        ERROR = "error", "下载失败"  # the bill could not be fetched; retried by the next run
        RUNNING = "running", "对账中"  # started from the back office, no result of the day yet

    bill_date = models.DateField(verbose_name="账单日期", unique=True)  # Beijing date of the bill
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices)
    wechat_count = models.PositiveIntegerField(verbose_name="微信笔数", default=0)  # bill rows (payments + refunds)
    local_count = models.PositiveIntegerField(verbose_name="本地笔数", default=0)
    wechat_fen = models.BigIntegerField(verbose_name="微信金额", default=0)  # fen: paid minus refunded, per the bill
    local_fen = models.BigIntegerField(verbose_name="本地金额", default=0)  # fen: paid minus refunded, per our rows
    differences = models.JSONField(verbose_name="差异", default=list, blank=True)
    error = models.TextField(verbose_name="错误", blank=True)
    alerted = models.BooleanField(verbose_name="已告警", default=False)
    checked_at = models.DateTimeField(verbose_name="对账时间", auto_now=True)
    # set when staff start a run from the back office ("立即对账"), cleared when its result is stored
    running_since = models.DateTimeField(verbose_name="对账开始于", null=True, blank=True)
    started_by = models.CharField(verbose_name="发起人", max_length=150, blank=True)

    class Meta:
        verbose_name = "对账"
        verbose_name_plural = "对账"
        ordering = ["-bill_date"]
        permissions = [("run_reconciliation", "可以按微信账单重新对账某一天")]

    def __str__(self) -> str:
        return f"{self.bill_date} {self.status}"


# --- recharge (top up the balance through WeChat Pay) --------------------------------------


class RechargePackage(models.Model):
    """Pay ``pay_fen`` through WeChat Pay, get ``pay_fen + bonus_fen`` on the balance (fen)."""

    # fen; the admin enters yuan (YuanAdminMixin) within these bounds
    pay_fen = models.PositiveIntegerField(
        verbose_name="支付金额",
        help_text="顾客通过微信支付的金额",
        validators=[MinValueValidator(1), MaxValueValidator(10**8)],
    )
    bonus_fen = models.PositiveIntegerField(
        verbose_name="赠送金额", default=0, help_text="额外记入余额的金额", validators=[MaxValueValidator(10**8)]
    )
    is_active = models.BooleanField(verbose_name="启用", default=True)
    sort = models.IntegerField(verbose_name="排序", default=0)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "充值套餐"
        verbose_name_plural = "充值套餐"
        ordering = ["sort", "pay_fen", "id"]
        constraints = [models.CheckConstraint(condition=models.Q(pay_fen__gte=1), name="rechargepackage_pay_gte_1")]

    def __str__(self) -> str:
        return f"充 {self.pay_fen / 100:.2f} 元送 {self.bonus_fen / 100:.2f} 元"


class Recharge(models.Model):
    """One top-up. ``recharge_no`` (UNIQUE, ``R`` + 14 digits of Shanghai time + 8 random digits)
    is the WeChat ``out_trade_no``: order numbers are digits only, so the payment notification
    routes by the leading ``R`` (``apps.payments.recharges``). ``pay_fen``/``bonus_fen`` are
    copied from the package at creation.

    ``unpaid -> paid`` by a conditional UPDATE that also credits the balance (two ledger rows,
    UNIQUE per recharge), once; ``unpaid -> expired`` after ``expires_at`` (the WeChat trade's
    time_expire: WeChat refuses payment after it) by the beat sweep. A payment WeChat reports
    anyway for an expired recharge is still credited (the customer's money arrived).
    """

    class Status(models.TextChoices):
        UNPAID = "unpaid", "待支付"
        PAID = "paid", "已到账"
        EXPIRED = "expired", "已过期"

    recharge_no = models.CharField(verbose_name="充值单号", max_length=32, unique=True)
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="recharges"
    )
    package = models.ForeignKey(
        RechargePackage, verbose_name="充值套餐", null=True, on_delete=models.SET_NULL, related_name="recharges"
    )
    pay_fen = models.PositiveIntegerField(verbose_name="支付金额")  # WeChat's total_fee
    bonus_fen = models.PositiveIntegerField(verbose_name="赠送金额", default=0)
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.UNPAID)
    prepay_id = models.CharField(verbose_name="预支付标识", max_length=64, blank=True)
    transaction_id = models.CharField(
        verbose_name="微信支付单号",
        help_text="微信的 transaction_id",
        max_length=32,
        null=True,
        blank=True,
        unique=True,
    )
    expires_at = models.DateTimeField(verbose_name="支付截止")
    paid_at = models.DateTimeField(verbose_name="到账时间", null=True, blank=True)
    api = models.CharField(verbose_name="支付接口", max_length=2, choices=PayApi.choices, default=PayApi.V2)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "充值"
        verbose_name_plural = "充值"
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "expires_at"], name="recharge_status_expires_idx")]

    def __str__(self) -> str:
        return self.recharge_no


# --- batch refunds (staff refund many orders at once; apps.payments.refund_batches) ---------


class RefundBatch(models.Model):
    """Staff refunded many orders at once, with one reason (CRMEB's refund queue); read-only
    once created. Each order is a :class:`RefundBatchItem`; counts per status come from them."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name="创建人", on_delete=models.PROTECT, related_name="+"
    )
    reason = models.CharField(verbose_name="退款原因", max_length=200)  # becomes each after-sale request's reason
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "批量退款"
        verbose_name_plural = "批量退款"
        ordering = ["-id"]
        permissions = [("batch_refund", "可以批量退款（选择订单或粘贴订单号）并重试失败的条目")]

    def __str__(self) -> str:
        return f"批次 #{self.pk}"


class RefundBatchItem(models.Model):
    """One order of a batch. ``queued`` (until ``next_attempt_at``; a task holding it leases it)
    -> the task requests and approves the after-sale in one transaction -> ``refunding``, then
    follows its Refund: ``refunded`` / ``failed``; ``skipped`` did nothing (``note`` says why).
    UNIQUE (order, reason) among items not skipped: naming an order twice adds no work."""

    class Status(models.TextChoices):
        QUEUED = "queued", "排队中"  # the task has not made the refund yet
        REFUNDING = "refunding", "退款中"  # after-sale approved, its Refund on its way
        REFUNDED = "refunded", "已退款"  # the Refund succeeded
        FAILED = "failed", "失败"  # could not be made, or its Refund FAILED: see note
        SKIPPED = "skipped", "已跳过"  # nothing done (unknown order, not refundable, already queued): see note

    MAX_ATTEMPTS = 3  # tries at making the refund before the item is FAILED
    BACKOFF_SECONDS = (60, 300)  # wait after the 1st and 2nd failed try

    batch = models.ForeignKey(RefundBatch, verbose_name="批次", on_delete=models.PROTECT, related_name="items")
    order_no = models.CharField(verbose_name="订单号", max_length=32)  # as staff named it
    order = models.ForeignKey(
        "orders.Order", verbose_name="订单", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )  # null: no such order (skipped)
    reason = models.CharField(verbose_name="退款原因", max_length=200)  # the batch's
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.QUEUED)
    amount_fen = models.PositiveIntegerField(
        verbose_name="退款金额", default=0
    )  # fen: refundable when queued; then the request's
    after_sale = models.OneToOneField(
        "orders.AfterSale", verbose_name="退款申请", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    refund = models.OneToOneField(
        Refund, verbose_name="退款", null=True, blank=True, on_delete=models.PROTECT, related_name="batch_item"
    )
    note = models.TextField(verbose_name="说明 / 最近错误", blank=True)
    attempts = models.PositiveSmallIntegerField(verbose_name="尝试次数", default=0)
    next_attempt_at = models.DateTimeField(verbose_name="下次尝试", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)
    finished_at = models.DateTimeField(verbose_name="完成时间", null=True, blank=True)

    objects = AutoNowQuerySet.as_manager()

    class Meta:
        verbose_name = "批量退款条目"
        verbose_name_plural = "批量退款条目"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["order", "reason"],
                condition=~models.Q(status="skipped"),
                name="refund_batch_item_once_per_order_reason",
            ),
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="refund_batch_item_due_idx")]

    def __str__(self) -> str:
        return self.order_no

    @classmethod
    def follow_refund(cls, *, refund_id: int, status: str, error: str = "") -> int:
        """The item that made Refund ``refund_id`` follows its new ``status`` (a Refund.Status):
        SUCCESS -> ``refunded``, FAILED -> ``failed`` with ``error``, PENDING (staff retried the
        failed refund) -> ``refunding`` again. A conditional UPDATE, called by
        ``apps.payments.refunds`` in the transaction that moves the Refund; 0 rows for a refund
        no batch made (or a move already followed)."""
        now = timezone.now()
        moves = {
            Refund.Status.SUCCESS: (
                cls.Status.REFUNDING,
                {"status": cls.Status.REFUNDED, "finished_at": now, "note": ""},
            ),
            Refund.Status.FAILED: (
                cls.Status.REFUNDING,
                {"status": cls.Status.FAILED, "finished_at": now, "note": f"退款失败：{error}"[:2000]},
            ),
            Refund.Status.PENDING: (
                cls.Status.FAILED,
                {"status": cls.Status.REFUNDING, "finished_at": None, "note": ""},
            ),
        }
        expected, changes = moves[status]
        return cls.objects.filter(refund_id=refund_id, status=expected).update(**changes)


from apps.payments.models_shipping import ShippingInfo, WechatJumpPath  # noqa: E402,F401  (Django finds them here)
