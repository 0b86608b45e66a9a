"""会员: levels staff define, the growth ledger and its per-customer total, paid membership
(SVIP) cards and their purchases.

A customer's level is derived, never stored: the highest :class:`Level` whose ``growth_min``
their growth reaches. ``Membership.growth`` is a cache of the sum of their :class:`GrowthEvent`
rows, changed only by a conditional UPDATE in the transaction that inserts the row.
``Membership.svip_expires_at`` changes only with a :class:`CardPurchase`'s state (paid,
refunded), in one transaction.
"""

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q


class Level(models.Model):
    """A member level: reached at ``growth_min`` growth; ``discount_percent`` of the price is
    paid for goods at their own price (95 = 5 % off, 100 = no discount)."""

    name = models.CharField(verbose_name="名称", max_length=32)
    growth_min = models.PositiveIntegerField(verbose_name="所需成长值", unique=True, help_text="成长值达到即升级")
    discount_percent = models.PositiveSmallIntegerField(
        verbose_name="折扣（%）",
        default=100,
        help_text="95 表示 95 折（优惠 5%），100 表示不打折",
        validators=[MinValueValidator(1), MaxValueValidator(100)],
    )
    icon = models.ImageField(verbose_name="图标", upload_to="members/levels/", max_length=200, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "会员等级"
        verbose_name_plural = "会员等级"
        ordering = ["growth_min"]
        constraints = [
            models.CheckConstraint(
                condition=Q(discount_percent__gte=1, discount_percent__lte=100), name="level_discount_percent_1_100"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A customer's member state: their growth (the sum of their ledger rows) and the end of
    their paid membership (SVIP while ``svip_expires_at`` is in the future). Created with the
    first growth row or card purchase; changed only by conditional UPDATEs in ``services``."""

    customer = models.OneToOneField(
        "accounts.Customer", verbose_name="顾客", primary_key=True, on_delete=models.CASCADE, related_name="membership"
    )
    growth = models.BigIntegerField(verbose_name="成长值", default=0)  # = sum of GrowthEvent.change
    svip_expires_at = models.DateTimeField(verbose_name="付费会员到期", null=True, blank=True)

    class Meta:
        verbose_name = "会员信息"
        verbose_name_plural = "会员信息"
        constraints = [models.CheckConstraint(condition=Q(growth__gte=0), name="membership_growth_gte_0")]
        # The dashboard counts the running paid memberships.
        indexes = [
            models.Index(
                fields=["svip_expires_at"], name="membership_svip_idx", condition=Q(svip_expires_at__isnull=False)
            )
        ]

    def __str__(self) -> str:
        return f"{self.customer_id}: {self.growth}"


class GrowthEvent(models.Model):
    """The append-only growth ledger: one row per change, never edited or deleted.

    ``(order_no, reason, ref)`` is UNIQUE so a completion is credited once per order and each
    refund taken back once (``ref``: the order number for a completion, the refund number for
    a refund, a staff note id for an adjustment).
    """

    class Reason(models.TextChoices):
        ORDER_COMPLETED = "order_completed", "订单完成"  # +1 per whole yuan of pay_fen - freight_fen
        ORDER_REFUNDED = "order_refunded", "订单退款"  # the refunded share taken back
        ADJUST = "adjust", "后台调整"  # staff adjustment

    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="growth_events"
    )
    change = models.BigIntegerField(verbose_name="变动")  # signed growth
    reason = models.CharField(verbose_name="原因", max_length=20, choices=Reason.choices)
    order_no = models.CharField(verbose_name="订单号", max_length=32, blank=True)
    ref = models.CharField(verbose_name="关联", max_length=64)
    # fen the row was computed from: a completion's pay_fen - freight_fen, a refund's refunded fen
    basis_fen = models.BigIntegerField(verbose_name="计算金额", default=0)
    created_at = models.DateTimeField(verbose_name="时间", auto_now_add=True)

    class Meta:
        verbose_name = "成长值流水"
        verbose_name_plural = "成长值流水"
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["order_no", "reason", "ref"], name="growth_event_once")]
        indexes = [models.Index(fields=["customer", "-id"], name="growth_event_customer_idx")]

    def __str__(self) -> str:
        return f"{self.change:+d} {self.get_reason_display()} {self.order_no}"


class MemberCard(models.Model):
    """A paid-membership card staff sell: ``days`` of SVIP for ``pay_fen`` (fen)."""

    name = models.CharField(verbose_name="名称", max_length=32)
    days = models.PositiveIntegerField(verbose_name="天数", validators=[MinValueValidator(1), MaxValueValidator(3660)])
    pay_fen = models.PositiveIntegerField(  # fen; the admin enters yuan
        verbose_name="售价", validators=[MinValueValidator(1), MaxValueValidator(10**8)]
    )
    original_fen = models.PositiveIntegerField(  # fen, shown struck through
        verbose_name="原价", default=0, validators=[MaxValueValidator(10**8)]
    )
    active = models.BooleanField(verbose_name="上架", default=True)
    sort = models.IntegerField(verbose_name="排序", default=0, help_text="小的在前")
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "付费会员卡"
        verbose_name_plural = "付费会员卡"
        ordering = ["sort", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(pay_fen__gte=1), name="member_card_pay_gte_1"),
            models.CheckConstraint(condition=Q(days__gte=1), name="member_card_days_gte_1"),
        ]

    def __str__(self) -> str:
        return self.name


class CardPurchase(models.Model):
    """One purchase of a member card, paid through WeChat like a recharge.

    ``purchase_no`` (UNIQUE, ``M`` + 14 digits of Shanghai time + 8 random digits) is the
    WeChat ``out_trade_no``; the payment notification routes by the leading ``M``. ``days`` and
    ``pay_fen`` are copied from the card. ``unpaid -> paid`` by a conditional UPDATE that also
    moves the customer's SVIP expiry by ``days`` (once); ``paid -> refunded`` shortens it by
    the refunded share of ``days``; ``unpaid -> expired`` after ``expires_at``.
    """

    class Status(models.TextChoices):
        UNPAID = "unpaid", "待支付"  # waiting for WeChat's notification
        PAID = "paid", "已支付"  # the days were added to the customer's SVIP expiry
        REFUNDED = "refunded", "已退款"  # (part of) the money returned; the expiry shortened
        EXPIRED = "expired", "已过期"  # never paid before expires_at

    class Api(models.TextChoices):  # the WeChat Pay API the trade was made with (its notification's)
        V2 = "v2", "v2 接口"
        V3 = "v3", "v3 接口"

    purchase_no = models.CharField(verbose_name="购买单号", max_length=32, unique=True)
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="card_purchases"
    )
    card = models.ForeignKey(MemberCard, verbose_name="会员卡", on_delete=models.PROTECT, related_name="purchases")
    card_name = models.CharField(verbose_name="卡名", max_length=32)  # at purchase
    days = models.PositiveIntegerField(verbose_name="天数")  # at purchase
    pay_fen = models.PositiveIntegerField(verbose_name="支付金额")  # fen, WeChat's total
    refunded_fen = models.PositiveIntegerField(verbose_name="已退金额", default=0)  # fen
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.UNPAID)
    api = models.CharField(verbose_name="支付接口", max_length=2, choices=Api.choices, default=Api.V2)
    prepay_id = models.CharField(verbose_name="预支付标识", max_length=64, blank=True)
    transaction_id = models.CharField(verbose_name="微信支付单号", max_length=32, null=True, blank=True, unique=True)
    # The SVIP period this purchase added (set when paid; ends_at moved back by a refund).
    starts_at = models.DateTimeField(verbose_name="生效时间", null=True, blank=True)
    ends_at = models.DateTimeField(verbose_name="到期时间", null=True, blank=True)
    expires_at = models.DateTimeField(verbose_name="支付截止")
    paid_at = models.DateTimeField(verbose_name="支付时间", null=True, blank=True)
    refunded_at = models.DateTimeField(verbose_name="退款时间", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "会员卡购买"
        verbose_name_plural = "会员卡购买"
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(refunded_fen__lte=models.F("pay_fen")), name="card_purchase_refund_lte_pay"
            )
        ]
        indexes = [
            models.Index(fields=["status", "expires_at"], name="card_purchase_status_idx"),
            models.Index(fields=["customer", "-id"], name="card_purchase_customer_idx"),
            models.Index(fields=["paid_at"], name="card_purchase_paid_at_idx"),
        ]

    def __str__(self) -> str:
        return self.purchase_no


# Customer tags and their rules live in their own module (registered with this app by the import).
from apps.members.models_tags import CustomerTag, Tag  # noqa: E402,F401
