"""Orders, their lines (price snapshots), the status log and the follow-up outbox."""

from django.db import models
from django.db.models import Q


class OrderStatus(models.TextChoices):
    UNPAID = "unpaid", "待支付"  # created; stock and slot held until pay_deadline
    PAID = "paid", "已支付"  # money received; goods to ship or consultation to hold
    SHIPPED = "shipped", "已发货"  # goods handed to the carrier
    COMPLETED = "completed", "已完成"  # received, or the consultation took place
    CANCELLED = "cancelled", "已取消"  # never paid (or paid late and refunded); stock/slot returned
    REFUNDING = "refunding", "退款中"  # an approved refund is on its way
    REFUNDED = "refunded", "已退款"  # fully refunded


class PayMethod(models.TextChoices):
    WECHAT = "wechat", "微信支付"
    BALANCE = "balance", "余额支付"


class Order(models.Model):
    """One purchase. Amounts in fen: ``pay_fen = goods + freight - coupon - points`` (>= 0).

    ``order_key`` (UNIQUE) is the two-phase key from confirm: the same key can become only one
    order. ``order_no`` (UNIQUE, <= 32 chars) is shown to the customer and is the WeChat
    ``out_trade_no``. ``status`` changes only by conditional UPDATEs in ``services``.
    """

    order_no = models.CharField(max_length=32, unique=True)
    order_key = models.CharField(max_length=64, unique=True)
    customer = models.ForeignKey("accounts.Customer", on_delete=models.PROTECT, related_name="orders")
    kind = models.CharField(max_length=16, default="goods")  # goods / consultation (catalog.Kind)
    status = models.CharField(max_length=16, choices=OrderStatus.choices, default=OrderStatus.UNPAID)
    goods_fen = models.PositiveIntegerField()  # fen: sum of line amounts
    freight_fen = models.PositiveIntegerField(default=0)  # fen
    coupon_fen = models.PositiveIntegerField(default=0)  # fen taken off by the coupon
    points_fen = models.PositiveIntegerField(default=0)  # fen taken off by points
    points_used = models.PositiveIntegerField(default=0)  # points spent (returned on cancel)
    pay_fen = models.PositiveIntegerField()  # fen the customer pays (= WeChat total_fee)
    coupon = models.ForeignKey("accounts.Coupon", null=True, blank=True, on_delete=models.PROTECT)
    pay_method = models.CharField(max_length=16, choices=PayMethod.choices, blank=True)
    slot = models.ForeignKey(
        "appointments.Slot", null=True, blank=True, on_delete=models.PROTECT, related_name="orders"
    )
    flash_sale = models.ForeignKey(  # the 秒杀 this order bought in (one line, the sale's price)
        "marketing.FlashSale", null=True, blank=True, on_delete=models.PROTECT, related_name="orders"
    )
    address = models.JSONField(null=True, blank=True)  # snapshot of accounts.Address
    remark = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    pay_deadline = models.DateTimeField()  # unpaid after this -> cancelled by the timeout task
    paid_at = models.DateTimeField(null=True, blank=True)
    shipped_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancel_reason = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-id"]
        permissions = [  # the back office's state changes (admin actions; README "Back office")
            ("ship_order", "Can ship paid goods orders"),
            ("complete_order", "Can mark orders completed"),
            ("cancel_order", "Can cancel unpaid orders (WeChat is asked first)"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(pay_fen=models.F("goods_fen") + models.F("freight_fen")
                            - models.F("coupon_fen") - models.F("points_fen")),
                name="order_pay_fen_sum",
            ),
        ]
        indexes = [
            models.Index(fields=["customer", "status"], name="order_customer_status_idx"),
            models.Index(fields=["status", "pay_deadline"], name="order_status_deadline_idx"),
        ]

    def __str__(self) -> str:
        return self.order_no


class OrderLine(models.Model):
    """A line of an order: a snapshot of name, specs and price at confirm time."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="lines")
    sku = models.ForeignKey("catalog.Sku", on_delete=models.PROTECT, related_name="order_lines")
    product = models.ForeignKey("catalog.Product", on_delete=models.PROTECT, related_name="order_lines")
    name = models.CharField(max_length=100)
    specs = models.JSONField(default=dict)
    price_fen = models.PositiveIntegerField()  # fen per unit
    quantity = models.PositiveIntegerField()
    amount_fen = models.PositiveIntegerField()  # fen: price_fen * quantity

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name} x{self.quantity}"


class OrderEvent(models.Model):
    """Append-only log of an order's status changes and money/stock events (Saleor OrderEvent)."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="events")
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16, blank=True)
    actor = models.CharField(max_length=64)  # "customer", "system:timeout", "wechat", "staff:<name>"
    note = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.order_id}: {self.from_status or '-'} -> {self.to_status or '-'} ({self.actor})"


class AfterSale(models.Model):
    """A customer's refund request (售后). Staff approve or reject it; approval makes a Refund.

    ``refund_no`` (UNIQUE) is shown to the customer and becomes the refund's ``out_refund_no``.
    """

    class Status(models.TextChoices):
        REQUESTED = "requested", "待审核"  # waiting for staff (or the auto-approval rule)
        APPROVED = "approved", "已同意"  # a Refund row exists and is on its way
        REJECTED = "rejected", "已拒绝"  # staff said no; see decision_note
        REFUNDED = "refunded", "已退款"  # the money is back
        FAILED = "failed", "退款失败"  # WeChat refused after retries: staff must act

    order = models.ForeignKey(Order, on_delete=models.PROTECT, related_name="after_sales")
    refund_no = models.CharField(max_length=32, unique=True)
    reason = models.CharField(max_length=200)
    amount_fen = models.PositiveIntegerField()  # fen asked for
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.REQUESTED)
    decided_by = models.CharField(max_length=64, blank=True)  # "staff:<name>" or "system:auto"
    decision_note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "after-sale request"
        permissions = [("decide_aftersale", "Can approve or reject refund requests")]

    def __str__(self) -> str:
        return self.refund_no


class FollowUp(models.Model):
    """Outbox row: a slow side effect written in the same transaction as the business change.

    After commit it is pushed to a Redis list (a Celery queue); the row, not the broker, is the
    source of truth: a beat task re-dispatches rows still pending. UNIQUE ``key`` (kind:order_no)
    means an event is recorded once however often the business change is replayed.
    """

    class Kind(models.TextChoices):
        SUBSCRIBE_MESSAGE = "subscribe_message", "订阅消息"  # "order paid" to the customer
        SMS = "sms", "短信"  # "order paid" text to the customer's phone (pluggable backend)
        POINTS_AWARD = "points_award", "积分奖励"  # points for a paid order
        CHAT_OPEN = "chat_open", "开启咨询聊天"  # a paid consultation's chat session (apps.chat)

    class Status(models.TextChoices):
        PENDING = "pending", "待处理"  # waiting for (another) attempt
        DONE = "done", "已完成"  # effect happened
        FAILED = "failed", "失败"  # gave up after MAX_ATTEMPTS; see last_error

    MAX_ATTEMPTS = 5
    LEASE_SECONDS = 300  # a worker that claimed a row and died frees it after this

    key = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="followups")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    locked_until = models.DateTimeField(null=True, blank=True)  # claimed by a worker until then
    created_at = models.DateTimeField(auto_now_add=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "dispatched_at"], name="followup_status_idx")]

    def __str__(self) -> str:
        return self.key
