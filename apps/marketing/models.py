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
