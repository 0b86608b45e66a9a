"""积分商城: items and the exchanges customers made (``apps.points_mall.services``)."""

from django.db import models
from django.db.models import Q


class Item(models.Model):
    """Something customers get for ``points``: ``kind`` GOODS sends ``sku`` as a paid 0-fen
    order (shipped like any other); COUPON gives a coupon of ``coupon_template``.

    ``stock``: exchanges left; it shrinks only by ``UPDATE ... SET stock = stock - 1 WHERE
    stock >= 1`` in the exchange's transaction (CHECK stock >= 0). ``limit_per_customer``:
    exchanges one customer may make (0: no limit), counted under the customer's row lock.
    """

    class Kind(models.TextChoices):
        GOODS = "goods", "实物商品"
        COUPON = "coupon", "优惠券"

    name = models.CharField(verbose_name="名称", max_length=64)
    kind = models.CharField(verbose_name="类型", max_length=8, choices=Kind.choices)
    sku = models.ForeignKey(
        "catalog.Sku", verbose_name="商品 SKU", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    coupon_template = models.ForeignKey(
        "marketing.CouponTemplate",
        verbose_name="优惠券模板",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    points = models.PositiveIntegerField(verbose_name="所需积分")
    stock = models.IntegerField(verbose_name="可兑换数量")
    limit_per_customer = models.PositiveIntegerField(verbose_name="每人限兑", default=1, help_text="0 表示不限")
    image = models.ImageField(verbose_name="图片", upload_to="points_mall/", max_length=200, blank=True)
    sort = models.IntegerField(verbose_name="排序", default=0, help_text="大的在前")
    is_active = models.BooleanField(verbose_name="上架", default=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "积分商品"
        verbose_name_plural = "积分商品"
        ordering = ["-sort", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(stock__gte=0), name="pointsmall_item_stock_gte_0"),
            models.CheckConstraint(condition=Q(points__gte=1), name="pointsmall_item_points_gte_1"),
            models.CheckConstraint(
                condition=Q(kind="goods", sku__isnull=False, coupon_template__isnull=True)
                | Q(kind="coupon", coupon_template__isnull=False, sku__isnull=True),
                name="pointsmall_item_kind_target",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Exchange(models.Model):
    """One exchange: ``points`` taken (a WalletEvent EXCHANGE row, ref ``exchange_no``) and
    either the goods order ``order_no`` or the ``coupon`` given, all in one transaction.

    Reversed at most once (``reversed_at`` set by a conditional UPDATE): the order refunded or
    the unused coupon withdrawn, the points back (a RETURN row, ref ``exchange_no``) and the
    item's stock back, in one transaction (``services.exchange_reverse``)."""

    exchange_no = models.CharField(verbose_name="兑换单号", max_length=32, unique=True)
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="points_exchanges"
    )
    item = models.ForeignKey(Item, verbose_name="积分商品", on_delete=models.PROTECT, related_name="exchanges")
    kind = models.CharField(verbose_name="类型", max_length=8, choices=Item.Kind.choices)
    points = models.PositiveIntegerField(verbose_name="积分")
    order_no = models.CharField(verbose_name="订单号", max_length=32, blank=True)  # goods
    coupon = models.ForeignKey(
        "accounts.Coupon", verbose_name="优惠券", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )  # coupon
    created_at = models.DateTimeField(verbose_name="兑换时间", auto_now_add=True)
    reversed_at = models.DateTimeField(verbose_name="撤销时间", null=True, blank=True)
    reversed_by = models.CharField(verbose_name="撤销人", max_length=64, blank=True)

    class Meta:
        verbose_name = "积分兑换记录"
        verbose_name_plural = "积分兑换记录"
        ordering = ["-id"]
        permissions = [("reverse_exchange", "可以撤销积分兑换（退回积分）")]
        indexes = [models.Index(fields=["customer", "item"], name="pointsmall_exchange_cust_idx")]

    def __str__(self) -> str:
        return self.exchange_no
