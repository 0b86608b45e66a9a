"""Coupons the shop gives by itself: a ``new_customer`` template at the first login, a
``birthday`` template once a year (``apps.marketing.gifts``)."""

from django.db import models


class CouponGift(models.Model):
    """One gift of a template to a customer: UNIQUE (template, customer, year), so a customer
    gets a ``new_customer`` template once (``year`` 0) and a ``birthday`` template once per
    Shanghai calendar year, however often the login hook or the daily job runs, or races."""

    template = models.ForeignKey(
        "marketing.CouponTemplate", verbose_name="券模板", on_delete=models.PROTECT, related_name="gifts"
    )
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="coupon_gifts"
    )
    year = models.PositiveSmallIntegerField(verbose_name="年份")  # 0: the new-customer gift
    coupon = models.ForeignKey(
        "accounts.Coupon", verbose_name="优惠券", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )  # set in the gift's transaction, right after the row that holds the key
    created_at = models.DateTimeField(verbose_name="赠送时间", auto_now_add=True)

    class Meta:
        verbose_name = "赠券记录"
        verbose_name_plural = "赠券记录"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["template", "customer", "year"], name="coupongift_once_per_year"),
        ]

    def __str__(self) -> str:
        return f"{self.template_id}/{self.customer_id}/{self.year}"
