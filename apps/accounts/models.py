"""Customers of the mini-program, their wallet (balance, points, coupons) and addresses.

Shop staff are Django's own ``auth.User`` (the admin); customers are not users: they log in
with WeChat and carry an API token (``apps/accounts/tokens.py``).
"""

from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone


class Customer(models.Model):
    """A WeChat user of the mini-program, identified by ``openid`` under our appid."""

    openid = models.CharField(verbose_name="微信 openid", max_length=64, unique=True)
    unionid = models.CharField(verbose_name="微信 unionid", max_length=64, blank=True)
    nickname = models.CharField(verbose_name="昵称", max_length=64, blank=True)
    avatar_url = models.URLField(verbose_name="头像", blank=True)
    phone = models.CharField(verbose_name="手机号", max_length=20, blank=True)
    balance_fen = models.BigIntegerField(verbose_name="余额", default=0)  # fen; changed only by conditional UPDATEs
    points = models.BigIntegerField(verbose_name="积分", default=0)  # one point is worth settings.POINT_VALUE_FEN fen
    is_active = models.BooleanField(verbose_name="启用", default=True)
    birthday = models.DateField(verbose_name="生日", null=True, blank=True)  # set by the customer (PATCH /me)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "顾客"
        verbose_name_plural = "顾客"
        constraints = [
            models.CheckConstraint(condition=Q(balance_fen__gte=0), name="customer_balance_fen_gte_0"),
            models.CheckConstraint(condition=Q(points__gte=0), name="customer_points_gte_0"),
        ]
        # The few inactive customers, for the token revocation sweep (apps.accounts.revocations).
        indexes = [
            models.Index(fields=["id"], condition=Q(is_active=False), name="customer_inactive_idx"),
            # The back office's order search: the bound phone exactly, the nickname by its start
            # (text_pattern_ops: LIKE 'x%' on PostgreSQL whatever the collation; ignored by SQLite).
            models.Index(fields=["phone"], name="customer_phone_idx", condition=~Q(phone="")),
            models.Index(fields=["nickname"], name="customer_nickname_idx", opclasses=["text_pattern_ops"]),
        ]

    def __str__(self) -> str:
        return self.nickname or self.openid

    def save(self, *args, **kwargs) -> None:
        """Save in a transaction (the caller's, or one of its own): the ``post_save`` receiver
        (``apps.accounts.apps``) records the token revocation of an inactive customer in it, so
        that the deactivation and its revocation row commit together."""
        with transaction.atomic(using=kwargs.get("using"), savepoint=False):
            super().save(*args, **kwargs)

    # DRF treats request.user as authenticated when this is true.
    is_authenticated = True
    is_anonymous = False


class WalletEvent(models.Model):
    """The append-only ledger of the balance and the points: every change is a row.

    ``Customer.balance_fen`` is the sum of the customer's balance rows, ``Customer.points`` the sum
    of their AVAILABLE points rows; frozen points are the sum of FROZEN rows (not stored on the
    customer). Rows are never deleted nor their amounts edited; only a points award's ``state``
    moves, by conditional UPDATE: FROZEN -> AVAILABLE when released (the customer's points grow in
    the same transaction) or FROZEN -> VOID when its order is cancelled or refunded.
    UNIQUE ``(kind, reason, ref)``: a second insert of the same change (paying, refunding or
    returning points for one order twice) fails, and the service reads that as done.
    """

    class Kind(models.TextChoices):
        BALANCE = "balance", "余额"
        POINTS = "points", "积分"

    class Reason(models.TextChoices):
        PAY = "pay", "支付订单"  # balance taken to pay an order
        REFUND = "refund", "退款"  # balance returned by a refund
        SPEND = "spend", "抵扣订单"  # points spent on an order
        RETURN = "return", "订单取消退回"  # points given back when an order is cancelled or refunded
        AWARD = "award", "消费奖励"  # points earned by a paid order (frozen first)
        REVOKE = "revoke", "退款扣回奖励"  # released award points taken back by a later full refund
        ADJUST = "adjust", "后台调整"  # staff adjustment
        RECHARGE = "recharge", "充值"  # balance paid in by a recharge (ref: recharge_no)
        BONUS = "bonus", "充值赠送"  # the bonus of a recharge package (ref: recharge_no)
        SIGN_IN = "sign_in", "签到"  # daily sign-in points (ref: sign-in date / customer)
        EXCHANGE = "exchange", "积分兑换"  # points spent in the points mall (ref: exchange_no)

    class State(models.TextChoices):
        AVAILABLE = "available", "可用"  # counted in the customer's balance / spendable points
        FROZEN = "frozen", "冻结中"  # an award waiting for its order to complete + POINTS_FREEZE_DAYS
        VOID = "void", "已作废"  # an award whose order was cancelled or refunded: never counted

    customer = models.ForeignKey(Customer, verbose_name="顾客", on_delete=models.PROTECT, related_name="wallet_events")
    kind = models.CharField(verbose_name="账户", max_length=16, choices=Kind.choices)
    reason = models.CharField(verbose_name="原因", max_length=16, choices=Reason.choices)
    amount = models.BigIntegerField(verbose_name="变动")  # signed; fen for balance, points for points
    ref = models.CharField(verbose_name="关联", max_length=64)  # order_no, out_refund_no or a staff note id
    order_no = models.CharField(verbose_name="订单号", max_length=32, blank=True)  # the order this change belongs to
    state = models.CharField(verbose_name="积分状态", max_length=16, choices=State.choices, default=State.AVAILABLE)
    # When a frozen award becomes spendable: null until its order completes (then completed_at +
    # POINTS_FREEZE_DAYS); for other rows the moment they counted (= created_at).
    available_at = models.DateTimeField(verbose_name="可用时间", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "余额/积分流水"
        verbose_name_plural = "余额/积分流水"
        constraints = [
            models.UniqueConstraint(fields=["kind", "reason", "ref"], name="wallet_event_once"),
            models.CheckConstraint(
                condition=Q(state="available") | Q(kind="points", reason="award"),
                name="wallet_event_only_awards_freeze",
            ),
        ]
        indexes = [
            models.Index(fields=["customer", "kind", "-id"], name="wallet_event_customer_idx"),
            models.Index(fields=["state", "available_at"], name="wallet_event_due_idx"),
            models.Index(fields=["order_no"], name="wallet_event_order_idx"),
        ]
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount:+d} {self.reason} {self.ref} ({self.state})"


class Coupon(models.Model):
    """A customer's coupon, usually received from a ``marketing.CouponTemplate``.

    Its terms are copied from the template at receipt (later template edits do not change coupons
    held); the scope (all / categories / products) is read from the template, and a coupon without
    one (granted by hand) applies to everything. Pricing: ``apps.marketing.coupons.coupon_discount``.
    ``status`` moves only in the wallet services, by conditional UPDATE: taken at order create
    (``coupon_take``), given back on cancel / full refund while valid (``coupon_return``). UNIQUE
    (``batch``, customer) makes a staff issue idempotent. The FKs name marketing's models as
    strings: accounts code never imports marketing.
    """

    class Status(models.TextChoices):
        AVAILABLE = "available", "可用"  # may be used by a new order
        USED = "used", "已使用"  # taken by order ``used_order_no`` (returned if it is cancelled)

    class Kind(models.TextChoices):
        AMOUNT = "amount", "满减"
        PERCENT = "percent", "折扣"

    customer = models.ForeignKey(Customer, verbose_name="顾客", on_delete=models.PROTECT, related_name="coupons")
    title = models.CharField(verbose_name="名称", max_length=64)
    kind = models.CharField(verbose_name="类型", max_length=16, choices=Kind.choices, default=Kind.AMOUNT)
    discount_fen = models.PositiveIntegerField(verbose_name="优惠金额", default=0)  # fen off (kind AMOUNT)
    percent = models.PositiveSmallIntegerField(verbose_name="折扣（减 %）", default=0)  # % off (kind PERCENT), 1..99
    max_discount_fen = models.PositiveIntegerField(
        verbose_name="最多优惠", null=True, blank=True
    )  # fen cap (PERCENT); null: none
    min_spend_fen = models.PositiveIntegerField(
        verbose_name="使用门槛", default=0
    )  # fen of in-scope goods (the threshold)
    valid_from = models.DateTimeField(verbose_name="生效时间", null=True, blank=True)  # null: usable at once
    valid_until = models.DateTimeField(verbose_name="到期时间")
    template = models.ForeignKey(
        "marketing.CouponTemplate",
        verbose_name="券模板",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="coupons",
    )
    batch = models.ForeignKey(
        "marketing.CouponIssue",
        verbose_name="发放批次",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="coupons",
    )
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.AVAILABLE)
    used_order_no = models.CharField(verbose_name="使用订单号", max_length=32, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "优惠券"
        verbose_name_plural = "优惠券"
        constraints = [
            models.UniqueConstraint(
                fields=["batch", "customer"], condition=Q(batch__isnull=False), name="coupon_once_per_batch"
            ),
        ]
        indexes = [models.Index(fields=["customer", "status", "valid_until"], name="coupon_customer_status_idx")]

    def __str__(self) -> str:
        if self.kind == self.Kind.PERCENT:
            return f"{self.title}（减 {self.percent}%）"
        return f"{self.title}（{self.discount_fen / 100:.2f} 元）"


class Address(models.Model):
    """A delivery address of a customer (mainland format: province/city/district)."""

    customer = models.ForeignKey(Customer, verbose_name="顾客", on_delete=models.CASCADE, related_name="addresses")
    name = models.CharField(verbose_name="收货人", max_length=32)
    phone = models.CharField(verbose_name="手机号", max_length=20)
    province = models.CharField(verbose_name="省", max_length=32)
    city = models.CharField(verbose_name="市", max_length=32)
    district = models.CharField(verbose_name="区", max_length=32, blank=True)
    detail = models.CharField(verbose_name="详细地址", max_length=200)
    is_default = models.BooleanField(verbose_name="默认", default=False)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    MAX_PER_CUSTOMER = 20  # API.md Additions: at most 20 addresses (409 limit_exceeded)

    class Meta:
        verbose_name = "收货地址"
        verbose_name_plural = "收货地址"
        ordering = ["-is_default", "-id"]
        constraints = [  # at most one default per customer; the services keep exactly one
            models.UniqueConstraint(fields=["customer"], condition=Q(is_default=True), name="address_one_default"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.province}{self.city}{self.district}{self.detail}"

    def snapshot(self) -> dict:
        """The address as stored on an order (later edits do not change old orders)."""
        return {
            "name": self.name,
            "phone": self.phone,
            "province": self.province,
            "city": self.city,
            "district": self.district,
            "detail": self.detail,
        }


class TokenRevocation(models.Model):
    """A customer whose API tokens must still be revoked in Redis: the outbox of a deactivation.

    Written in the transaction that deactivates (or deletes) the customer, tried once after
    commit and by beat's ``tokens-revoke-sweep`` until Redis confirms; then deleted (only if
    no deactivation came since: ``requested_at`` unchanged). Until then the sold-out gate in
    front of Django may still know the tokens (``apps.accounts.revocations``).
    """

    # Not a foreign key: a deleted customer's revocation outlives the customer's row.
    customer_id = models.BigIntegerField(verbose_name="顾客 ID", unique=True)
    requested_at = models.DateTimeField(verbose_name="停用时间", default=timezone.now)  # the latest deactivation
    attempts = models.PositiveIntegerField(verbose_name="尝试次数", default=0)  # failed tries so far
    last_error = models.TextField(verbose_name="最近错误", blank=True)

    class Meta:
        verbose_name = "待撤销令牌"
        verbose_name_plural = "待撤销令牌"
        ordering = ["requested_at", "pk"]

    def __str__(self) -> str:
        return f"customer {self.customer_id} (since {self.requested_at:%Y-%m-%d %H:%M:%S})"


class SubscribeTemplate(models.Model):
    """A WeChat subscription-message template staff manage (API.md "Messages and the WeChat account").

    ``kind`` is the shop's message (order paid, shipped, consultation reminder, chat message);
    ``scene`` groups the ids the mini-program asks the customer for at once
    (``GET /api/v1/subscribe-templates?scene=``). ``fields`` maps the shop's value names to the
    template's keywords (``{"order_no": "character_string1", ...}``: what the template calls each
    value). An inactive row stops the sends of its kind.
    """

    class Scene(models.TextChoices):
        ORDER = "order", "订单"
        CONSULTATION = "consultation", "咨询"

    class Kind(models.TextChoices):
        ORDER_PAID = "order_paid", "订单支付成功"
        ORDER_SHIPPED = "order_shipped", "订单发货"
        CONSULTATION_REMINDER = "consultation_reminder", "咨询开始提醒"
        CHAT_MESSAGE = "chat_message", "咨询新消息"
        WAITLIST_OPEN = "waitlist_open", "候补日期有空档"

    scene = models.CharField(verbose_name="场景", max_length=20, choices=Scene.choices)
    kind = models.CharField(verbose_name="消息类型", max_length=40, choices=Kind.choices, unique=True)
    template_id = models.CharField(verbose_name="模板编号", max_length=128)
    fields = models.JSONField(
        verbose_name="字段对应",
        default=dict,
        blank=True,
        help_text='本店数值名 -> 模板关键词，如 {"order_no": "character_string1"}',
    )
    is_active = models.BooleanField(verbose_name="启用", default=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)

    class Meta:
        verbose_name = "订阅消息模板"
        verbose_name_plural = "订阅消息模板"
        ordering = ["scene", "kind"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}（{self.template_id}）"


class SubscribeRefusal(models.Model):
    """A customer who refused a kind of subscription message (WeChat errcode 43101: no
    subscription left for the template). One row per customer and kind; sends of that kind are
    skipped for ``SUBSCRIBE_REFUSAL_QUIET_HOURS`` after ``refused_at`` (then tried once more:
    the customer may have subscribed again in the mini-program)."""

    customer = models.ForeignKey(
        Customer, verbose_name="顾客", on_delete=models.CASCADE, related_name="subscribe_refusals"
    )
    kind = models.CharField(verbose_name="消息类型", max_length=40, choices=SubscribeTemplate.Kind.choices)
    template_id = models.CharField(verbose_name="模板编号", max_length=128)
    refused_at = models.DateTimeField(verbose_name="最近拒收时间", default=timezone.now)
    times = models.PositiveIntegerField(verbose_name="拒收次数", default=1)

    class Meta:
        verbose_name = "订阅消息拒收"
        verbose_name_plural = "订阅消息拒收"
        constraints = [models.UniqueConstraint(fields=["customer", "kind"], name="subscribe_refusal_customer_kind")]

    def __str__(self) -> str:
        return f"{self.customer_id} {self.kind}"


class SmsCode(models.Model):
    """One SMS verification code sent to ``phone`` for ``customer``: only its HMAC-SHA256 is
    stored (``code_hash``, keyed by SECRET_KEY), it lives ``expires_at``, is checked at most
    ``SMS_CODE_MAX_ATTEMPTS`` times (``attempts``, raised only by a conditional UPDATE below the
    cap) and is used once (``used_at`` set by a conditional UPDATE; apps.accounts.phones)."""

    customer = models.ForeignKey(Customer, verbose_name="顾客", on_delete=models.CASCADE, related_name="sms_codes")
    phone = models.CharField(verbose_name="手机号", max_length=20)
    code_hash = models.CharField(verbose_name="验证码摘要", max_length=64)
    client_ip = models.CharField(verbose_name="请求地址", max_length=45, blank=True)
    created_at = models.DateTimeField(verbose_name="发送时间", default=timezone.now)
    expires_at = models.DateTimeField(verbose_name="过期时间")
    used_at = models.DateTimeField(verbose_name="使用时间", null=True, blank=True)
    attempts = models.PositiveIntegerField(verbose_name="校验次数", default=0)

    class Meta:
        verbose_name = "短信验证码"
        verbose_name_plural = "短信验证码"
        indexes = [models.Index(fields=["customer", "phone", "created_at"], name="smscode_customer_phone_idx")]

    def __str__(self) -> str:
        return f"{self.phone} {self.created_at:%Y-%m-%d %H:%M:%S}"
