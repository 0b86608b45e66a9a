"""Distribution (分销): who referred whom, commissions as a ledger, withdrawals and their
merchant transfers, channel codes and the mini-program codes made once per scene.

Money is integer fen. A distributor's totals (``available_fen``, ``frozen_fen``,
``withdrawn_fen``) change only together with a :class:`LedgerEntry` row whose deltas they are
the sum of (``apps/distribution/ledger.py``), as points change with ``WalletEvent`` rows.
"""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q


class Distributor(models.Model):
    """One customer's distribution account, made on first need (login, ``GET /me/distribution``).

    ``referrer`` is set once (conditional UPDATE ``WHERE referrer IS NULL``) and never forms a
    loop. ``available_fen`` may go below zero only by a refund reversing a commission that was
    already available (a debt later commissions pay off); a withdrawal never takes it below zero.
    """

    customer = models.OneToOneField(
        "accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="distributor"
    )
    referral_code = models.CharField(verbose_name="推广码", max_length=16, unique=True)
    referrer = models.ForeignKey(
        "self", verbose_name="上级推广人", null=True, blank=True, on_delete=models.PROTECT, related_name="team"
    )
    bound_at = models.DateTimeField(verbose_name="绑定时间", null=True, blank=True)
    channel = models.ForeignKey(
        "distribution.Channel",
        verbose_name="来源渠道",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="customers",
    )
    available_fen = models.IntegerField(verbose_name="可提现佣金", default=0)  # fen
    frozen_fen = models.IntegerField(verbose_name="冻结佣金", default=0)  # fen
    withdrawn_fen = models.IntegerField(verbose_name="已提现", default=0)  # fen paid out by transfers
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "分销员"
        verbose_name_plural = "分销员"
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(referrer=models.F("id")), name="distributor_not_own_referrer"),
            models.CheckConstraint(
                condition=Q(frozen_fen__gte=0) & Q(withdrawn_fen__gte=0), name="distributor_totals_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.customer} ({self.referral_code})"


class CommissionSettings(models.Model):
    """The shop's commission rates (one row, pk 1), in basis points: 1000 = 10 %."""

    level1_rate_bp = models.PositiveIntegerField(
        verbose_name="一级佣金比例（万分比）", default=1000, help_text="1000 = 10%：下单顾客的直接推广人"
    )
    level2_rate_bp = models.PositiveIntegerField(
        verbose_name="二级佣金比例（万分比）", default=500, help_text="500 = 5%：推广人的推广人"
    )
    enabled = models.BooleanField(verbose_name="启用分销", default=True)

    class Meta:
        verbose_name = "佣金设置"
        verbose_name_plural = "佣金设置"
        constraints = [
            models.CheckConstraint(
                condition=Q(level1_rate_bp__lte=10000) & Q(level2_rate_bp__lte=10000),
                name="commission_rates_at_most_100pct",
            ),
        ]

    def __str__(self) -> str:
        return f"一级 {self.level1_rate_bp / 100:g}% / 二级 {self.level2_rate_bp / 100:g}%"


class ProductCommission(models.Model):
    """A product's own rates, overriding :class:`CommissionSettings` for its order lines."""

    product = models.OneToOneField(
        "catalog.Product", verbose_name="商品", on_delete=models.CASCADE, related_name="commission"
    )
    level1_rate_bp = models.PositiveIntegerField(verbose_name="一级佣金比例（万分比）")
    level2_rate_bp = models.PositiveIntegerField(verbose_name="二级佣金比例（万分比）")

    class Meta:
        verbose_name = "商品佣金比例"
        verbose_name_plural = "商品佣金比例"
        constraints = [
            models.CheckConstraint(
                condition=Q(level1_rate_bp__lte=10000) & Q(level2_rate_bp__lte=10000),
                name="product_commission_at_most_100pct",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.product}: {self.level1_rate_bp / 100:g}% / {self.level2_rate_bp / 100:g}%"


class Commission(models.Model):
    """What one distributor earns from one paid order at one level; UNIQUE (order, level).

    ``frozen`` at payment, ``available`` once the order completed ``COMMISSION_FREEZE_DAYS``
    ago, ``reversed`` when refunds took all of it; ``reversed_fen`` is the part refunds took
    (a partial refund reverses the same share), so what counts is ``amount_fen - reversed_fen``.
    """

    class Status(models.TextChoices):
        FROZEN = "frozen", "冻结中"
        AVAILABLE = "available", "可提现"
        REVERSED = "reversed", "已退回"

    order = models.ForeignKey("orders.Order", verbose_name="订单", on_delete=models.PROTECT, related_name="commissions")
    level = models.PositiveSmallIntegerField(verbose_name="级别", choices=[(1, "一级"), (2, "二级")])
    distributor = models.ForeignKey(
        Distributor, verbose_name="获得者", on_delete=models.PROTECT, related_name="commissions"
    )
    base_fen = models.PositiveIntegerField(verbose_name="计佣金额")  # fen: pay_fen - freight_fen
    amount_fen = models.PositiveIntegerField(verbose_name="佣金")  # fen, rounded down
    reversed_fen = models.PositiveIntegerField(verbose_name="已退回", default=0)  # fen taken back by refunds
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.FROZEN)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    available_at = models.DateTimeField(verbose_name="解冻时间", null=True, blank=True)

    class Meta:
        verbose_name = "佣金"
        verbose_name_plural = "佣金"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["order", "level"], name="commission_once_per_order_level"),
            models.CheckConstraint(
                condition=Q(reversed_fen__lte=models.F("amount_fen")), name="commission_reversed_at_most_amount"
            ),
        ]
        indexes = [models.Index(fields=["status", "order"], name="commission_status_idx")]

    def __str__(self) -> str:
        return f"{self.order_id} L{self.level} {self.amount_fen}"


class LedgerEntry(models.Model):
    """One change of a distributor's totals, with its deltas (fen). UNIQUE (reason, ref): an
    event is booked once however often it is replayed. The totals are the sums of the deltas."""

    class Reason(models.TextChoices):
        COMMISSION = "commission", "佣金入账（冻结）"
        RELEASE = "release", "佣金解冻"
        REVERSE = "reverse", "退款退回佣金"
        WITHDRAW = "withdraw", "申请提现"
        WITHDRAW_RETURN = "withdraw_return", "提现退回"
        WITHDRAW_PAID = "withdraw_paid", "提现到账"

    distributor = models.ForeignKey(Distributor, verbose_name="分销员", on_delete=models.PROTECT, related_name="ledger")
    reason = models.CharField(verbose_name="原因", max_length=20, choices=Reason.choices)
    ref = models.CharField(verbose_name="关联单号", max_length=80)  # commission id, refund, withdrawal_no
    available_delta_fen = models.IntegerField(verbose_name="可提现变动", default=0)
    frozen_delta_fen = models.IntegerField(verbose_name="冻结变动", default=0)
    withdrawn_delta_fen = models.IntegerField(verbose_name="已提现变动", default=0)
    created_at = models.DateTimeField(verbose_name="时间", auto_now_add=True)

    class Meta:
        verbose_name = "佣金流水"
        verbose_name_plural = "佣金流水"
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["reason", "ref"], name="distribution_ledger_once")]

    def __str__(self) -> str:
        return f"{self.reason} {self.ref}"


class Withdrawal(models.Model):
    """A distributor's request to be paid ``amount_fen`` of their available commission.

    ``pending`` -> ``approved`` (staff; a :class:`TransferBill` is written) -> ``wait_confirm``
    (WeChat accepted; the customer confirms with ``package_info``) -> ``paid``; or ``rejected``
    (staff, amount back) or ``failed`` (FAIL/CANCELLED, amount back). At most one unsettled per
    distributor (partial UNIQUE).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "待审核"
        APPROVED = "approved", "已批准（转账中）"
        WAIT_CONFIRM = "wait_confirm", "待顾客确认收款"
        PAID = "paid", "已到账"
        REJECTED = "rejected", "已驳回"
        FAILED = "failed", "转账失败"

    UNSETTLED = (Status.PENDING, Status.APPROVED, Status.WAIT_CONFIRM)

    withdrawal_no = models.CharField(verbose_name="提现单号", max_length=32, unique=True)
    distributor = models.ForeignKey(
        Distributor, verbose_name="分销员", on_delete=models.PROTECT, related_name="withdrawals"
    )
    amount_fen = models.PositiveIntegerField(verbose_name="金额")  # fen
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    reason = models.CharField(verbose_name="原因", max_length=200, blank=True)  # rejection or failure
    decided_by = models.CharField(verbose_name="审核人", max_length=150, blank=True)
    decided_at = models.DateTimeField(verbose_name="审核时间", null=True, blank=True)
    settled_at = models.DateTimeField(verbose_name="结束时间", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="申请时间", auto_now_add=True)

    class Meta:
        verbose_name = "提现"
        verbose_name_plural = "提现"
        ordering = ["-id"]
        permissions = [("decide_withdrawal", "审核提现（批准、驳回、查询转账）")]
        constraints = [
            models.UniqueConstraint(
                fields=["distributor"],
                condition=Q(status__in=["pending", "approved", "wait_confirm"]),
                name="withdrawal_one_unsettled",
            ),
        ]

    def __str__(self) -> str:
        return self.withdrawal_no


class TransferBill(models.Model):
    """The ONE WeChat merchant transfer of an approved withdrawal (``out_bill_no`` =
    ``withdrawal_no``), with what we know of it.

    ``new``: never sent; ``sending``: a create went out and its answer may be lost, so the next
    attempt QUERIES first; ``wait_confirm``/``processing``: WeChat holds it; ``success``,
    ``fail``, ``cancelled``: final.
    """

    class State(models.TextChoices):
        NEW = "new", "待发起"
        SENDING = "sending", "已发起，结果未知"
        PROCESSING = "processing", "微信处理中"
        WAIT_CONFIRM = "wait_confirm", "待用户确认"
        SUCCESS = "success", "成功"
        FAIL = "fail", "失败"
        CANCELLED = "cancelled", "已撤销"

    FINAL = (State.SUCCESS, State.FAIL, State.CANCELLED)

    withdrawal = models.OneToOneField(
        Withdrawal, verbose_name="提现", on_delete=models.PROTECT, related_name="transfer"
    )
    out_bill_no = models.CharField(verbose_name="商户单号 out_bill_no", max_length=32, unique=True)
    openid = models.CharField(verbose_name="收款用户 openid", max_length=64)
    amount_fen = models.PositiveIntegerField(verbose_name="金额")  # fen
    state = models.CharField(verbose_name="状态", max_length=16, choices=State.choices, default=State.NEW)
    wechat_state = models.CharField(verbose_name="微信状态", max_length=24, blank=True)
    transfer_bill_no = models.CharField(verbose_name="微信单号 transfer_bill_no", max_length=64, blank=True)
    package_info = models.TextField(verbose_name="确认收款参数 package_info", blank=True)
    fail_reason = models.CharField(verbose_name="失败原因", max_length=200, blank=True)
    attempts = models.PositiveIntegerField(verbose_name="发起次数", default=0)
    queries = models.PositiveIntegerField(verbose_name="查询次数", default=0)
    last_error = models.TextField(verbose_name="最近错误", blank=True)
    locked_until = models.DateTimeField(verbose_name="处理中（租约至）", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)
    finished_at = models.DateTimeField(verbose_name="结束时间", null=True, blank=True)

    class Meta:
        verbose_name = "商家转账"
        verbose_name_plural = "商家转账"
        ordering = ["-id"]

    def __str__(self) -> str:
        return self.out_bill_no


class Channel(models.Model):
    """A channel code (渠道二维码) staff hand out: scans count ``visits``, first logins through
    it ``registrations`` (conditional ``F() + 1`` UPDATEs)."""

    code = models.CharField(
        verbose_name="渠道码",
        max_length=16,
        unique=True,
        validators=[RegexValidator(r"^[A-Za-z0-9]+$", "渠道码只能是字母和数字。")],
        help_text="字母和数字（最多 16 个），放进小程序码的 scene：c=<渠道码>",
    )
    name = models.CharField(verbose_name="渠道名称", max_length=64)
    visits = models.PositiveIntegerField(verbose_name="访问次数", default=0)
    registrations = models.PositiveIntegerField(verbose_name="注册人数", default=0)
    image = models.CharField(verbose_name="小程序码图片", max_length=200, blank=True)  # storage name
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "渠道二维码"
        verbose_name_plural = "渠道二维码"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.code})"


class PromotionCode(models.Model):
    """A mini-program code image made once per scene (``getwxacodeunlimit``) and kept in the
    default storage: UNIQUE ``scene``."""

    scene = models.CharField(verbose_name="场景值 scene", max_length=32, unique=True)
    page = models.CharField(verbose_name="页面", max_length=128, blank=True)
    storage_name = models.CharField(verbose_name="文件", max_length=200)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "推广小程序码"
        verbose_name_plural = "推广小程序码"
        ordering = ["-id"]

    def __str__(self) -> str:
        return self.scene
