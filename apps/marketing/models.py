"""Flash sales (秒杀) and what each customer bought in them.

Marketing is asked by orders at confirm/create (``apps.marketing.services``), never the reverse.
How units move between a sale, its SKU and the orders is written down once, in
``apps/marketing/services.py`` ("Conservation").
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
    ``apps.marketing.services`` (conditional F() UPDATEs); the CHECKs are the last line of defence.
    The original price shown next to the sale price is the SKU's current ``price_fen``.
    """

    title = models.CharField(verbose_name="标题", max_length=64)
    sku = models.ForeignKey("catalog.Sku", verbose_name="SKU", on_delete=models.PROTECT, related_name="flash_sales")
    price_fen = models.PositiveIntegerField(verbose_name="秒杀价")  # fen per unit during the sale
    stock = models.IntegerField(verbose_name="秒杀库存")  # units the sale may still sell
    sold = models.IntegerField(verbose_name="已售", default=0)  # units of this sale in live orders
    starts_at = models.DateTimeField(verbose_name="开始时间")  # aware; shown in Shanghai time
    ends_at = models.DateTimeField(verbose_name="结束时间")  # aware; the sale is live while starts_at <= now < ends_at
    limit_per_customer = models.PositiveIntegerField(verbose_name="每人限购", default=1)  # units per customer, live orders
    is_active = models.BooleanField(verbose_name="启用", default=True)  # off: not listed and not sold (staff pause)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "秒杀"
        verbose_name_plural = "秒杀"
        ordering = ["starts_at", "id"]
        permissions = [("manage_flashsale", "Can schedule and change flash sales (秒杀)")]
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
    customer = models.ForeignKey("accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="flash_purchases")
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
    ``max_discount_fen`` (null: no cap). Both need the goods in ``scope`` to reach
    ``threshold_fen``. Scope ALL, CATEGORY (``categories``: a product counts when its category
    or that category's parent is listed) or PRODUCT (``products``). Validity: the fixed window
    ``valid_from``..``valid_to`` (aware, Shanghai), or, when ``valid_days`` is set, from receipt
    for that many days (``valid_to`` then only ends receiving).

    ``total``: coupons that may ever be handed out; ``issued`` counts them and grows only by
    ``UPDATE ... SET issued = issued + 1 WHERE issued < total`` (CHECK issued <= total).
    ``per_customer``: coupons one customer may *receive* themselves (``CouponReceipt``);
    staff issues count against ``total`` but not against it.
    """

    class Kind(models.TextChoices):
        AMOUNT = "amount", "满减"
        PERCENT = "percent", "折扣"

    class Scope(models.TextChoices):
        ALL = "all", "全场"
        CATEGORY = "category", "指定分类"
        PRODUCT = "product", "指定商品"

    name = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.AMOUNT)
    amount_fen = models.PositiveIntegerField(default=0)  # fen off (AMOUNT)
    percent = models.PositiveSmallIntegerField(default=0)  # % off (PERCENT)
    max_discount_fen = models.PositiveIntegerField(null=True, blank=True)  # fen cap (PERCENT)
    threshold_fen = models.PositiveIntegerField(default=0)  # fen of in-scope goods needed
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.ALL)
    categories = models.ManyToManyField("catalog.Category", blank=True, related_name="coupon_templates")
    products = models.ManyToManyField("catalog.Product", blank=True, related_name="coupon_templates")
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    valid_days = models.PositiveIntegerField(null=True, blank=True)  # days from receipt
    total = models.PositiveIntegerField()
    issued = models.PositiveIntegerField(default=0)
    per_customer = models.PositiveIntegerField(default=1)
    is_active = models.BooleanField(default=True)  # off: not listed, not receivable, not issuable
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "coupon template"
        permissions = [("issue_coupon", "Can hand out coupons to customers")]
        constraints = [
            models.CheckConstraint(condition=Q(issued__lte=F("total")), name="coupontemplate_issued_lte_total"),
            models.CheckConstraint(condition=Q(per_customer__gte=1), name="coupontemplate_per_customer_gte_1"),
            models.CheckConstraint(
                condition=(Q(kind="amount", amount_fen__gte=1)
                           | Q(kind="percent", percent__gte=1, percent__lte=99)),
                name="coupontemplate_terms"),
            models.CheckConstraint(
                condition=Q(valid_days__gte=1) | Q(valid_days__isnull=True, valid_to__isnull=False),
                name="coupontemplate_validity"),
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

    template = models.ForeignKey(CouponTemplate, on_delete=models.CASCADE, related_name="receipts")
    customer = models.ForeignKey("accounts.Customer", on_delete=models.CASCADE, related_name="coupon_receipts")
    count = models.PositiveIntegerField(default=0)

    class Meta:
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

    template = models.ForeignKey(CouponTemplate, on_delete=models.PROTECT, related_name="issues")
    customer = models.ForeignKey("accounts.Customer", null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+")  # one customer; null: the filter below
    joined_after = models.DateTimeField(null=True, blank=True)
    joined_before = models.DateTimeField(null=True, blank=True)
    min_points = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    cursor = models.BigIntegerField(default=0)  # last customer id handled
    granted = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)  # none left in the template
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "coupon issue"

    def __str__(self) -> str:
        return f"issue {self.pk}: {self.template_id}"


# --- daily sign-in -------------------------------------------------------------------------

class SignInRule(models.Model):
    """Points for the ``day``-th day of a sign-in streak (1, 2, ... N). The streak cycles: day
    N+1 of a streak earns day 1's points again (``apps.marketing.signin``)."""

    day = models.PositiveSmallIntegerField(unique=True)
    points = models.PositiveIntegerField()

    class Meta:
        ordering = ["day"]
        verbose_name = "sign-in rule"
        constraints = [models.CheckConstraint(condition=Q(day__gte=1), name="signinrule_day_gte_1")]

    def __str__(self) -> str:
        return f"day {self.day}: {self.points}"


class SignIn(models.Model):
    """One customer's sign-in on one Shanghai calendar day: UNIQUE (customer, date)."""

    customer = models.ForeignKey("accounts.Customer", on_delete=models.CASCADE, related_name="sign_ins")
    date = models.DateField()
    streak = models.PositiveIntegerField()
    points = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-date"]
        constraints = [models.UniqueConstraint(fields=["customer", "date"], name="signin_customer_date_uniq")]

    def __str__(self) -> str:
        return f"{self.customer_id} {self.date} ({self.streak})"
