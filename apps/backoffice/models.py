"""The back office's own rows: the named permissions of its pages (exports, calendars) and the
dashboard's daily figures of closed days."""

from django.db import models


class BackOffice(models.Model):
    """No table: carries the back office's named permissions (``backoffice.export_data``...)."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "后台"
        verbose_name_plural = "后台"
        permissions = [
            ("export_data", "可以导出订单、退款、支付和对账数据（CSV / Excel）"),
            ("view_dashboard", "可以查看工作台的经营数据"),
            ("view_revenue", "可以查看工作台的销售额、客单价和退款金额"),
        ]

    def __str__(self) -> str:
        return "后台"


class DailyFigure(models.Model):
    """The dashboard's figures of one closed Shanghai day (before today), summed from the source
    rows by ``apps.backoffice.day_figures`` and summed again whole when a flow changes them:
    orders created that day (and how many of them are paid by now), orders paid that day and
    their ``pay_fen``, order refunds that succeeded that day, customers who joined that day, and
    the commissions written that day less what refunds took back. Money in fen. UNIQUE ``day``."""

    day = models.DateField(verbose_name="日期", unique=True)
    orders = models.PositiveIntegerField(verbose_name="下单数", default=0)
    orders_paid = models.PositiveIntegerField(verbose_name="其中已支付", default=0)
    paid_orders = models.PositiveIntegerField(verbose_name="支付订单数", default=0)
    revenue_fen = models.BigIntegerField(verbose_name="销售额", default=0)
    refunds = models.PositiveIntegerField(verbose_name="退款笔数", default=0)
    refund_fen = models.BigIntegerField(verbose_name="退款金额", default=0)
    new_customers = models.PositiveIntegerField(verbose_name="新客户", default=0)
    commission_fen = models.BigIntegerField(verbose_name="佣金", default=0)
    computed_at = models.DateTimeField(verbose_name="计算时间", auto_now=True)

    class Meta:
        verbose_name = "工作台日数据"
        verbose_name_plural = "工作台日数据"
        default_permissions = ()

    def __str__(self) -> str:
        return f"{self.day:%Y-%m-%d}"


class DailyProductSales(models.Model):
    """Units and fen of one product in the orders paid on one closed Shanghai day (their lines):
    the best sellers of a range are the sums of its days. UNIQUE ``(day, product)``."""

    day = models.DateField(verbose_name="日期")
    product = models.ForeignKey("catalog.Product", verbose_name="商品", on_delete=models.CASCADE, related_name="+")
    units = models.PositiveIntegerField(verbose_name="件数", default=0)
    amount_fen = models.BigIntegerField(verbose_name="金额", default=0)

    class Meta:
        verbose_name = "商品日销量"
        verbose_name_plural = "商品日销量"
        default_permissions = ()
        constraints = [models.UniqueConstraint(fields=["day", "product"], name="daily_product_sales_day_product")]

    def __str__(self) -> str:
        return f"{self.day:%Y-%m-%d} #{self.product_id}"
