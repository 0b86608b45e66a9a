"""Orders, their lines (price snapshots), the status log, the follow-up outbox and the cart."""

from django.db import models
from django.db.models import Q
from django.db.models.fields.json import KT

from apps.catalog.models import Kind


class OrderStatus(models.TextChoices):
    UNPAID = "unpaid", "待支付"  # created; stock and slot held until pay_deadline
    PAID = "paid", "已支付"  # money received; goods to ship or consultation to hold
    SHIPPED = "shipped", "已发货"  # goods handed to the carrier
    COMPLETED = "completed", "已完成"  # received, or the consultation took place
    CANCELLED = "cancelled", "已取消"  # never paid (or paid late and refunded); stock/slot returned
    REFUNDING = "refunding", "退款中"  # an approved refund is on its way
    REFUNDED = "refunded", "已退款"  # fully refunded


class Delivery(models.TextChoices):
    EXPRESS = "express", "快递配送"  # shipped to the order's address (the default)
    PICKUP = "pickup", "到店自提"  # collected at a store with a pickup code; never shipped, no freight


class PayMethod(models.TextChoices):
    WECHAT = "wechat", "微信支付"
    BALANCE = "balance", "余额支付"
    POINTS = "points", "积分兑换"  # a 0-fen points-mall order (apps.points_mall), paid as it is made


def pickup_code_masked(code: str | None) -> str:
    """What staff see of a pickup code: ``"****5217"`` (its last four digits), "" without one.
    Only the customer's own order answer has the whole code (apps.orders.pickup)."""
    return f"****{code[-4:]}" if code else ""


class Order(models.Model):
    """One purchase. Amounts in fen: ``pay_fen = goods + freight - coupon - points + adjust - member``
    (>= 0); ``adjust_fen`` is staff's 改价 before payment (negative: cheaper;
    ``apps.payments.price_change``); ``member_fen`` the level discount at confirm (apps.members).

    ``order_key`` (UNIQUE) is the two-phase key from confirm: the same key can become only one
    order. ``order_no`` (UNIQUE, <= 32 chars) is shown to the customer and is the WeChat
    ``out_trade_no``. ``status`` changes only by conditional UPDATEs in ``services``.
    """

    order_no = models.CharField(verbose_name="订单号", max_length=32, unique=True)
    order_key = models.CharField(verbose_name="下单令牌", max_length=64, unique=True)
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="orders"
    )
    kind = models.CharField(verbose_name="类型", max_length=16, choices=Kind.choices, default=Kind.GOODS)
    status = models.CharField(
        verbose_name="状态", max_length=16, choices=OrderStatus.choices, default=OrderStatus.UNPAID
    )
    goods_fen = models.PositiveIntegerField(verbose_name="商品金额")  # fen: sum of line amounts
    freight_fen = models.PositiveIntegerField(verbose_name="运费", default=0)  # fen
    coupon_fen = models.PositiveIntegerField(verbose_name="优惠券抵扣", default=0)  # fen taken off by the coupon
    points_fen = models.PositiveIntegerField(verbose_name="积分抵扣", default=0)  # fen taken off by points
    points_used = models.PositiveIntegerField(verbose_name="使用积分", default=0)  # points spent (returned on cancel)
    adjust_fen = models.IntegerField(
        verbose_name="改价调整", default=0
    )  # fen, signed: staff's price change before payment
    member_fen = models.PositiveIntegerField(verbose_name="会员折扣", default=0)  # fen: the level discount
    pay_fen = models.PositiveIntegerField(verbose_name="实付")  # fen the customer pays (= WeChat total_fee)
    coupon = models.ForeignKey(
        "accounts.Coupon", verbose_name="优惠券", null=True, blank=True, on_delete=models.PROTECT
    )
    pay_method = models.CharField(verbose_name="支付方式", max_length=16, choices=PayMethod.choices, blank=True)
    slot = models.ForeignKey(
        "appointments.Slot", verbose_name="时段", null=True, blank=True, on_delete=models.PROTECT, related_name="orders"
    )
    flash_sale = models.ForeignKey(  # the 秒杀 this order bought in (one line, the sale's price)
        "marketing.FlashSale",
        verbose_name="秒杀",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="orders",
    )
    group = models.ForeignKey(  # the 拼团 group this order holds a seat in (apps.marketing.group_buys)
        "marketing.Group", verbose_name="拼团", null=True, blank=True, on_delete=models.PROTECT, related_name="orders"
    )
    bargain = models.ForeignKey(  # the 砍价 record this order bought (apps.marketing.bargains)
        "marketing.BargainRecord",
        verbose_name="砍价",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="orders",
    )
    address = models.JSONField(verbose_name="收货地址", null=True, blank=True)  # snapshot of accounts.Address
    remark = models.CharField(verbose_name="顾客备注", max_length=200, blank=True)
    merchant_remark = models.CharField(
        verbose_name="商家备注", max_length=500, blank=True
    )  # staff only, never shown to the customer
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    pay_deadline = models.DateTimeField(verbose_name="支付截止")  # unpaid after this -> cancelled by the timeout task
    paid_at = models.DateTimeField(verbose_name="支付时间", null=True, blank=True)
    shipped_at = models.DateTimeField(verbose_name="发货时间", null=True, blank=True)
    completed_at = models.DateTimeField(verbose_name="完成时间", null=True, blank=True)
    cancelled_at = models.DateTimeField(verbose_name="取消时间", null=True, blank=True)
    cancel_reason = models.CharField(verbose_name="取消原因", max_length=64, blank=True)
    # Self-pickup (自提): the store by id and as it was at confirm (apps.stores sits above orders,
    # so no foreign key); the code is given when the order is paid (apps.orders.pickup) and the
    # verification that completed the order is written by the same conditional UPDATE.
    delivery = models.CharField(
        verbose_name="配送方式", max_length=16, choices=Delivery.choices, default=Delivery.EXPRESS
    )
    pickup_store_id = models.PositiveIntegerField(verbose_name="自提门店", null=True, blank=True)  # stores.Store id
    pickup_store = models.JSONField(verbose_name="自提门店信息", null=True, blank=True)  # snapshot at confirm
    pickup_code = models.CharField(verbose_name="核销码", max_length=16, blank=True)
    pickup_verified_at = models.DateTimeField(verbose_name="核销时间", null=True, blank=True)
    pickup_verified_by = models.CharField(verbose_name="核销人", max_length=150, blank=True)
    # The receiver, read from the address snapshot by the database (stored generated columns, never
    # written by code): the back office's search finds an order by them through an index.
    receiver_name = models.GeneratedField(
        verbose_name="收货人", expression=KT("address__name"), output_field=models.TextField(), db_persist=True
    )
    receiver_phone = models.GeneratedField(
        verbose_name="收货人电话", expression=KT("address__phone"), output_field=models.TextField(), db_persist=True
    )

    class Meta:
        verbose_name = "订单"
        verbose_name_plural = "订单"
        ordering = ["-id"]
        permissions = [  # the back office's state changes (admin actions; README "Back office")
            ("ship_order", "可以给已支付的实物订单发货"),
            ("complete_order", "可以将订单标记为已完成"),
            ("cancel_order", "可以取消待支付订单（先向微信确认）"),
            ("change_price", "可以给待支付订单改价（先关闭微信的支付单）"),
            ("change_price_limited", "可以给待支付订单改价（商品金额的 ±OPS_PRICE_CHANGE_PERCENT % 以内）"),
            ("edit_address", "可以修改未发货订单的收货地址"),
            ("edit_merchant_remark", "可以填写订单的商家备注"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    pay_fen=models.F("goods_fen")
                    + models.F("freight_fen")
                    - models.F("coupon_fen")
                    - models.F("points_fen")
                    + models.F("adjust_fen")
                    - models.F("member_fen")
                ),
                name="order_pay_fen_sum_with_member",
            ),
            # A pickup code names one order among those that can still be collected.
            models.UniqueConstraint(
                fields=["pickup_code"],
                name="order_pickup_code_live_uniq",
                condition=Q(status__in=["paid", "refunding"]) & ~Q(pickup_code=""),
            ),
        ]
        indexes = [
            models.Index(fields=["customer", "status"], name="order_customer_status_idx"),
            models.Index(fields=["status", "pay_deadline"], name="order_status_deadline_idx"),
            # The back-office dashboard's ranges (apps/backoffice/selectors.py).
            models.Index(fields=["created_at"], name="order_created_at_idx"),
            models.Index(fields=["paid_at"], name="order_paid_at_idx"),
            # Verification finds an order by its code; a store's staff list their pickups.
            models.Index(fields=["pickup_code"], name="order_pickup_code_idx", condition=~Q(pickup_code="")),
            models.Index(
                fields=["pickup_store_id", "status"], name="order_pickup_store_idx", condition=Q(delivery="pickup")
            ),
            # The back office's search: the receiver's phone exactly, the name by its start
            # (text_pattern_ops: LIKE 'x%' on PostgreSQL whatever the collation; ignored by SQLite).
            models.Index(fields=["receiver_phone"], name="order_receiver_phone_idx"),
            models.Index(fields=["receiver_name"], name="order_receiver_name_idx", opclasses=["text_pattern_ops"]),
            # The to-do list's and the 待发货 tab's count read this index alone (a million orders).
            models.Index(fields=["status", "kind", "delivery"], name="order_status_kind_delivery_idx"),
            # The automatic receipt's due orders, oldest shipment first: only the shipped ones.
            models.Index(fields=["shipped_at", "id"], name="order_shipped_due_idx", condition=Q(status="shipped")),
        ]

    def __str__(self) -> str:
        return self.order_no

    @property
    def pickup_code_masked(self) -> str:
        """What staff see of the pickup code: ``****5217`` ("" without one)."""
        return pickup_code_masked(self.pickup_code)


class OrderLine(models.Model):
    """A line of an order: a snapshot of name, specs and price at confirm time."""

    order = models.ForeignKey(Order, verbose_name="订单", on_delete=models.CASCADE, related_name="lines")
    sku = models.ForeignKey("catalog.Sku", verbose_name="SKU", on_delete=models.PROTECT, related_name="order_lines")
    product = models.ForeignKey(
        "catalog.Product", verbose_name="商品", on_delete=models.PROTECT, related_name="order_lines"
    )
    name = models.CharField(verbose_name="商品名", max_length=100)
    specs = models.JSONField(verbose_name="规格", default=dict)
    price_fen = models.PositiveIntegerField(verbose_name="价格")  # fen per unit
    quantity = models.PositiveIntegerField(verbose_name="数量")
    amount_fen = models.PositiveIntegerField(verbose_name="金额")  # fen: price_fen * quantity

    class Meta:
        verbose_name = "订单明细"
        verbose_name_plural = "订单明细"
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name} × {self.quantity}"


class OrderEvent(models.Model):
    """Append-only log of an order's status changes and money/stock events (Saleor OrderEvent)."""

    order = models.ForeignKey(Order, verbose_name="订单", on_delete=models.CASCADE, related_name="events")
    from_status = models.CharField(verbose_name="原状态", max_length=16, choices=OrderStatus.choices, blank=True)
    to_status = models.CharField(verbose_name="新状态", max_length=16, choices=OrderStatus.choices, blank=True)
    actor = models.CharField(
        verbose_name="操作人", max_length=64
    )  # "customer", "system:timeout", "wechat", "staff:<name>"
    note = models.CharField(verbose_name="说明", max_length=255, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "订单日志"
        verbose_name_plural = "订单日志"
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.get_from_status_display() or '-'} → {self.get_to_status_display() or '-'}"


class AfterSale(models.Model):
    """A customer's refund request (售后). Staff approve or reject it; approval makes a Refund.

    ``refund_no`` (UNIQUE) is shown to the customer and becomes the refund's ``out_refund_no``.
    """

    class Status(models.TextChoices):
        REQUESTED = "requested", "待审核"  # waiting for staff (or the auto-approval rule)
        # Return first (shipped goods): staff agreed once the goods are back (apps.payments.returns).
        APPROVED_RETURN = "approved_return", "待退货"  # the customer is to send the goods back
        RETURNING = "returning", "退货中"  # the customer gave the return tracking number
        APPROVED = "approved", "已同意"  # a Refund row exists and is on its way
        REJECTED = "rejected", "已拒绝"  # staff said no; see decision_note
        REFUNDED = "refunded", "已退款"  # the money is back
        FAILED = "failed", "退款失败"  # WeChat refused after retries: staff must act

    OPEN = (Status.REQUESTED, Status.APPROVED_RETURN, Status.RETURNING, Status.APPROVED)

    order = models.ForeignKey(Order, verbose_name="订单", on_delete=models.PROTECT, related_name="after_sales")
    refund_no = models.CharField(verbose_name="退款单号", max_length=32, unique=True)
    reason = models.CharField(verbose_name="原因", max_length=200)
    amount_fen = models.PositiveIntegerField(verbose_name="申请金额")  # fen asked for
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.REQUESTED)
    decided_by = models.CharField(verbose_name="处理人", max_length=64, blank=True)  # "staff:<name>" or "system:auto"
    decision_note = models.CharField(verbose_name="处理说明", max_length=200, blank=True)
    created_at = models.DateTimeField(verbose_name="申请时间", auto_now_add=True)
    decided_at = models.DateTimeField(verbose_name="处理时间", null=True, blank=True)
    # Return first: the customer's parcel back to the shop, and when staff received it.
    return_carrier = models.CharField(verbose_name="退货快递", max_length=32, blank=True)
    return_tracking_no = models.CharField(verbose_name="退货单号", max_length=40, blank=True)
    return_sent_at = models.DateTimeField(verbose_name="寄回时间", null=True, blank=True)
    return_received_at = models.DateTimeField(verbose_name="收到退货时间", null=True, blank=True)

    class Meta:
        verbose_name = "退款申请"
        verbose_name_plural = "退款申请"
        ordering = ["-id"]
        permissions = [
            ("decide_aftersale", "可以同意或拒绝退款申请"),
            ("approve_small_refund", "可以同意限额以内的退款申请（SERVICE_REFUND_LIMIT_FEN）"),
            ("receive_return", "可以确认收到退货（随后退款）"),
        ]
        indexes = [models.Index(fields=["order", "status"], name="aftersale_order_status_idx")]

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
        POINTS_AWARD = "points_award", "积分奖励"  # points for a paid order, frozen until it completes
        SHIPPED_MESSAGE = "shipped_message", "发货通知"  # "order shipped" subscription message
        CHAT_OPEN = "chat_open", "开启咨询聊天"  # a paid consultation's chat session (apps.chat)
        COMMISSION_AWARD = "commission_award", "分销佣金"  # the referrers' frozen commissions (apps.distribution)
        SHIPPING_INFO = "shipping_info", "上传发货信息"  # WeChat's 发货信息管理, one per version (apps.payments)
        GROWTH_AWARD = "growth_award", "会员成长值"  # a completed order's growth (apps.members)
        GROWTH_REVOKE = "growth_revoke", "退款扣回成长值"  # a refund's share taken back, one per refund (apps.payments)
        PRINT_TICKET = (
            "print_ticket",
            "支付后打印小票",
        )  # the paid order's ticket on print-on-payment printers (apps.printing)
        DAY_FIGURES = "day_figures", "工作台日数据"  # a closed day's dashboard figures summed again (apps.backoffice)

    class Status(models.TextChoices):
        PENDING = "pending", "待处理"  # waiting for (another) attempt
        DONE = "done", "已完成"  # effect happened
        FAILED = "failed", "失败"  # gave up after MAX_ATTEMPTS; see last_error

    MAX_ATTEMPTS = 5
    LEASE_SECONDS = 300  # a worker that claimed a row and died frees it after this

    key = models.CharField(verbose_name="唯一键", max_length=100, unique=True)
    kind = models.CharField(verbose_name="类型", max_length=32, choices=Kind.choices)
    order = models.ForeignKey(Order, verbose_name="订单", on_delete=models.CASCADE, related_name="followups")
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(verbose_name="尝试次数", default=0)
    last_error = models.TextField(verbose_name="最近错误", blank=True)
    locked_until = models.DateTimeField(verbose_name="锁定至", null=True, blank=True)  # claimed by a worker until then
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    dispatched_at = models.DateTimeField(verbose_name="派发时间", null=True, blank=True)
    done_at = models.DateTimeField(verbose_name="完成时间", null=True, blank=True)

    class Meta:
        verbose_name = "后续任务"
        verbose_name_plural = "后续任务"
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "dispatched_at"], name="followup_status_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk}"


class Shipment(models.Model):
    """The parcel of a shipped goods order: carrier (``apps.logistics.carriers``) and tracking
    number, written by ``order_ship`` in the shipping transaction. One per order (UNIQUE)."""

    order = models.OneToOneField(Order, verbose_name="订单", on_delete=models.CASCADE, related_name="shipment")
    carrier_code = models.CharField(
        verbose_name="快递公司编码", max_length=32
    )  # Kuaidi100 ``com``: shunfeng, zhongtong, ...
    carrier = models.CharField(verbose_name="快递公司", max_length=32)  # shown name: 顺丰速运
    tracking_no = models.CharField(verbose_name="快递单号", max_length=40)
    shipped_by = models.CharField(verbose_name="发货人", max_length=64)
    shipped_at = models.DateTimeField(verbose_name="发货时间")

    class Meta:
        verbose_name = "发货记录"
        verbose_name_plural = "发货记录"
        ordering = ["-id"]
        indexes = [models.Index(fields=["tracking_no"], name="shipment_tracking_idx")]

    def __str__(self) -> str:
        return f"{self.carrier} {self.tracking_no}"


class CartItem(models.Model):
    """A line of a customer's cart: one SKU (UNIQUE per customer) and how many.

    Changes only through ``apps.orders.cart`` (adding to a line is a conditional UPDATE, never
    read-modify-write); ``order_create`` removes the lines an order bought in its transaction.
    """

    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="cart_items"
    )
    sku = models.ForeignKey("catalog.Sku", verbose_name="SKU", on_delete=models.CASCADE, related_name="cart_items")
    quantity = models.PositiveIntegerField(verbose_name="数量")  # 1..MAX_QUANTITY (apps.orders.cart)
    created_at = models.DateTimeField(verbose_name="加入时间", auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)

    class Meta:
        verbose_name = "购物车"
        verbose_name_plural = "购物车"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["customer", "sku"], name="cart_item_customer_sku_uniq"),
            models.CheckConstraint(condition=Q(quantity__gte=1), name="cart_item_quantity_gte_1"),
        ]

    def __str__(self) -> str:
        return f"{self.sku_id} x{self.quantity}"
