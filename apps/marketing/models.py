"""Flash sales (秒杀) and what each customer bought in them.

Marketing is asked by orders at confirm/create (``apps.marketing.flash_sales``), never the reverse.
How units move between a sale, its SKU and the orders is written down once, in
``apps/marketing/flash_sales.py`` ("Conservation").
"""

from django.db import models
from django.db.models import F, Q


class FlashSale(models.Model):
    """A SKU sold at ``price_fen`` from ``starts_at`` to ``ends_at`` (aware, Shanghai), out of
    its own ``stock`` (units left for the sale), at most ``limit_per_customer`` units each.

    A flash-sale order takes its units from BOTH this row's ``stock`` and the SKU's stock
    (two conditional UPDATEs in the order's transaction), so the sale can never sell more than
    the warehouse holds. ``sold`` is the units of this sale in orders that were not given back
    (cancelled, or refunded and restocked). ``stock`` and ``sold`` change only through
    ``apps.marketing.flash_sales`` (conditional F() UPDATEs); the CHECKs are the last line of defence.
    The original price shown next to the sale price is the SKU's current ``price_fen``.
    """

    title = models.CharField(verbose_name="标题", max_length=64)
    sku = models.ForeignKey("catalog.Sku", verbose_name="SKU", on_delete=models.PROTECT, related_name="flash_sales")
    price_fen = models.PositiveIntegerField(verbose_name="秒杀价")  # fen per unit during the sale
    stock = models.IntegerField(verbose_name="秒杀库存")  # units the sale may still sell
    sold = models.IntegerField(verbose_name="已售", default=0)  # units of this sale in live orders
    starts_at = models.DateTimeField(verbose_name="开始时间")  # aware; shown in Shanghai time
    ends_at = models.DateTimeField(verbose_name="结束时间")  # aware; the sale is live while starts_at <= now < ends_at
    limit_per_customer = models.PositiveIntegerField(
        verbose_name="每人限购", default=1
    )  # units per customer, live orders
    is_active = models.BooleanField(verbose_name="启用", default=True)  # off: not listed and not sold (staff pause)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "秒杀"
        verbose_name_plural = "秒杀"
        ordering = ["starts_at", "id"]
        permissions = [("manage_flashsale", "可以安排和修改秒杀")]
        constraints = [
            models.CheckConstraint(condition=Q(stock__gte=0), name="flashsale_stock_gte_0"),
            models.CheckConstraint(condition=Q(sold__gte=0), name="flashsale_sold_gte_0"),
            models.CheckConstraint(condition=Q(price_fen__gte=1), name="flashsale_price_fen_gte_1"),
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="flashsale_ends_after_start"),
            models.CheckConstraint(condition=Q(limit_per_customer__gte=1), name="flashsale_limit_gte_1"),
        ]
        indexes = [models.Index(fields=["is_active", "ends_at"], name="flashsale_active_ends_idx")]

    def __str__(self) -> str:
        return self.title


class FlashSalePurchase(models.Model):
    """Units one customer holds in one sale, over live orders (the per-customer allowance).

    UNIQUE(sale, customer); ``quantity`` grows by a conditional
    ``UPDATE ... SET quantity = quantity + n WHERE ... AND quantity + n <= limit`` in the order's
    transaction and shrinks when an order is cancelled or refunded, so the limit holds under
    races without locking the sale.
    """

    sale = models.ForeignKey(FlashSale, verbose_name="秒杀", on_delete=models.CASCADE, related_name="purchases")
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="flash_purchases"
    )
    quantity = models.IntegerField(verbose_name="数量", default=0)  # units in live orders of this sale

    class Meta:
        verbose_name = "秒杀购买"
        verbose_name_plural = "秒杀购买"
        constraints = [
            models.UniqueConstraint(fields=["sale", "customer"], name="flashsalepurchase_sale_customer_uniq"),
            models.CheckConstraint(condition=Q(quantity__gte=0), name="flashsalepurchase_quantity_gte_0"),
        ]

    def __str__(self) -> str:
        return f"{self.sale_id}/{self.customer_id}: {self.quantity}"


# --- coupons (templates, receipts, staff issues) -------------------------------------------


class CouponTemplate(models.Model):
    """What a coupon gives, and how many may be handed out (API.md "Coupons").

    ``kind`` AMOUNT: ``amount_fen`` off; PERCENT: ``percent``% off (1..99) capped at
    ``max_discount_fen`` (null: no cap). Both need ``threshold_fen`` of goods in ``scope`` (ALL,
    CATEGORY, PRODUCT). Validity: the fixed window ``valid_from``..``valid_to`` (aware, Shanghai),
    or ``valid_days`` from receipt (``valid_to`` then only ends receiving). ``total``: coupons
    that may ever be handed out; ``issued`` counts them, grown only by ``UPDATE ... SET issued =
    issued + 1 WHERE issued < total`` (CHECK issued <= total). ``per_customer``: coupons one
    customer may *receive* (``CouponReceipt``); staff issues count against ``total`` only.
    """

    class Kind(models.TextChoices):
        AMOUNT = "amount", "满减"
        PERCENT = "percent", "折扣"

    class Occasion(models.TextChoices):
        """How customers get it: received / issued by staff, or given by the shop once
        (``apps.marketing.gifts``: at the first login; on the birthday, once a year)."""

        NONE = "", "领取或后台发放"
        NEW_CUSTOMER = "new_customer", "新人券（首次登录赠送）"
        BIRTHDAY = "birthday", "生日券（每年生日赠送）"
        POINTS_MALL = "points_mall", "积分商城兑换券"  # given only by a points-mall exchange

    class Scope(models.TextChoices):
        ALL = "all", "全场"
        CATEGORY = "category", "指定分类"
        PRODUCT = "product", "指定商品"

    name = models.CharField(verbose_name="名称", max_length=64)
    kind = models.CharField(verbose_name="类型", max_length=16, choices=Kind.choices, default=Kind.AMOUNT)
    amount_fen = models.PositiveIntegerField(
        verbose_name="优惠金额",
        default=0,
        blank=True,  # fen off (AMOUNT)
        help_text="满减券：减多少元",
    )
    percent = models.PositiveSmallIntegerField(verbose_name="折扣（减 %）", default=0)  # % off (PERCENT)
    max_discount_fen = models.PositiveIntegerField(
        verbose_name="最多优惠",
        null=True,
        blank=True,  # fen cap (PERCENT)
        help_text="折扣券的封顶金额；空 = 不封顶",
    )
    threshold_fen = models.PositiveIntegerField(
        verbose_name="使用门槛",
        default=0,
        blank=True,  # fen of in-scope goods needed
        help_text="适用商品满多少元可用；0 或空 = 无门槛",
    )
    scope = models.CharField(verbose_name="适用范围", max_length=16, choices=Scope.choices, default=Scope.ALL)
    # CATEGORY: a product counts when its category or that category's parent is listed.
    categories = models.ManyToManyField(
        "catalog.Category", verbose_name="适用分类", blank=True, related_name="coupon_templates"
    )
    products = models.ManyToManyField(
        "catalog.Product", verbose_name="适用商品", blank=True, related_name="coupon_templates"
    )
    valid_from = models.DateTimeField(verbose_name="生效时间", null=True, blank=True)
    valid_to = models.DateTimeField(verbose_name="截止时间", null=True, blank=True)
    valid_days = models.PositiveIntegerField(verbose_name="领取后有效天数", null=True, blank=True)  # days from receipt
    total = models.PositiveIntegerField(verbose_name="发放总量")
    issued = models.PositiveIntegerField(verbose_name="已发放", default=0)
    per_customer = models.PositiveIntegerField(verbose_name="每人限领", default=1)
    # new_customer / birthday / points_mall: given by the shop (gifts, exchanges), never listed or received
    occasion = models.CharField(
        verbose_name="发放场景", max_length=16, choices=Occasion.choices, default=Occasion.NONE, blank=True
    )
    is_active = models.BooleanField(verbose_name="启用", default=True)  # off: not listed, not receivable, not issuable
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "优惠券模板"
        verbose_name_plural = "优惠券模板"
        permissions = [("issue_coupon", "可以向顾客发放优惠券")]
        constraints = [
            models.CheckConstraint(condition=Q(issued__lte=F("total")), name="coupontemplate_issued_lte_total"),
            models.CheckConstraint(condition=Q(per_customer__gte=1), name="coupontemplate_per_customer_gte_1"),
            models.CheckConstraint(
                condition=(Q(kind="amount", amount_fen__gte=1) | Q(kind="percent", percent__gte=1, percent__lte=99)),
                name="coupontemplate_terms",
            ),
            models.CheckConstraint(
                condition=Q(valid_days__gte=1) | Q(valid_days__isnull=True, valid_to__isnull=False),
                name="coupontemplate_validity",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.issued)


class CouponReceipt(models.Model):
    """How many coupons of a template one customer received themselves (the per-customer limit).

    UNIQUE(template, customer); ``count`` grows by a conditional
    ``UPDATE ... SET count = count + 1 WHERE count < per_customer`` in the receiving transaction.
    """

    template = models.ForeignKey(
        CouponTemplate, verbose_name="券模板", on_delete=models.CASCADE, related_name="receipts"
    )
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="coupon_receipts"
    )
    count = models.PositiveIntegerField(verbose_name="已领张数", default=0)

    class Meta:
        verbose_name = "领券记录"
        verbose_name_plural = "领券记录"
        constraints = [
            models.UniqueConstraint(fields=["template", "customer"], name="couponreceipt_template_customer_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.template_id}/{self.customer_id}: {self.count}"


class CouponIssue(models.Model):
    """Staff hand out a template: to one customer, or to every active customer matching the
    filter (joined in a window, at least ``min_points`` points). The row is the outbox: written
    in the admin's transaction, pushed to Celery after commit, re-pushed by beat while PENDING
    or RUNNING; the task walks customers in id order from ``cursor`` and grants each one coupon,
    idempotent by UNIQUE (coupon.batch, coupon.customer)."""

    class Status(models.TextChoices):
        PENDING = "pending", "待发放"
        RUNNING = "running", "发放中"
        DONE = "done", "已完成"

    template = models.ForeignKey(CouponTemplate, verbose_name="券模板", on_delete=models.PROTECT, related_name="issues")
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )  # one customer; null: the filter below
    joined_after = models.DateTimeField(verbose_name="注册不早于", null=True, blank=True)
    joined_before = models.DateTimeField(verbose_name="注册早于", null=True, blank=True)
    min_points = models.PositiveIntegerField(verbose_name="积分不少于", null=True, blank=True)
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    cursor = models.BigIntegerField(verbose_name="进度（顾客 ID）", default=0)  # last customer id handled
    granted = models.PositiveIntegerField(verbose_name="已发放", default=0)
    skipped = models.PositiveIntegerField(verbose_name="未发放", default=0)  # none left in the template
    created_by = models.CharField(verbose_name="操作人", max_length=150, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    finished_at = models.DateTimeField(verbose_name="完成时间", null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "优惠券发放"
        verbose_name_plural = "优惠券发放"

    def __str__(self) -> str:
        return f"发放 #{self.pk}"


# --- daily sign-in -------------------------------------------------------------------------


class SignInRule(models.Model):
    """Points for the ``day``-th day of a sign-in streak (1, 2, ... N). The streak cycles: day
    N+1 of a streak earns day 1's points again (``apps.marketing.signin``)."""

    day = models.PositiveSmallIntegerField(verbose_name="连续第几天", unique=True)
    points = models.PositiveIntegerField(verbose_name="积分")

    class Meta:
        ordering = ["day"]
        verbose_name = "签到规则"
        verbose_name_plural = "签到规则"
        constraints = [models.CheckConstraint(condition=Q(day__gte=1), name="signinrule_day_gte_1")]

    def __str__(self) -> str:
        return f"第 {self.day} 天：{self.points} 积分"


class SignIn(models.Model):
    """One customer's sign-in on one Shanghai calendar day: UNIQUE (customer, date)."""

    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="sign_ins"
    )
    date = models.DateField(verbose_name="日期")
    streak = models.PositiveIntegerField(verbose_name="连续天数")
    points = models.PositiveIntegerField(verbose_name="积分")
    created_at = models.DateTimeField(verbose_name="签到时间", auto_now_add=True)

    class Meta:
        ordering = ["-date"]
        verbose_name = "签到"
        verbose_name_plural = "签到"
        constraints = [models.UniqueConstraint(fields=["customer", "date"], name="signin_customer_date_uniq")]

    def __str__(self) -> str:
        return f"{self.customer_id} {self.date} ({self.streak})"


# Coupons the shop gives (new customer, birthday) in their own module.
from apps.marketing.models_gifts import CouponGift  # noqa: E402,F401

# 拼团 and 砍价 live in their own module (registered with this app by the import).
from apps.marketing.models_group_bargain import (  # noqa: E402,F401
    BargainCampaign,
    BargainHelp,
    BargainHelperDay,
    BargainRecord,
    Group,
    GroupBuy,
    GroupSeat,
)
