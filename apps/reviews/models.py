"""Reviews of completed order lines: one per line, rating 1-5, text, up to 6 images."""

from django.db import models
from django.db.models import Q


class Review(models.Model):
    """A customer's review of one line of a completed order (UNIQUE line: one review each).

    ``images`` are URLs of our uploads (``apps.files``). Hidden reviews are not shown and do not
    count in the product's ``review_count`` / ``rating_total`` (moved with F() by the services).
    """

    MAX_IMAGES = 6

    line = models.OneToOneField(
        "orders.OrderLine", verbose_name="订单明细", on_delete=models.PROTECT, related_name="review"
    )
    order = models.ForeignKey("orders.Order", verbose_name="订单", on_delete=models.PROTECT, related_name="reviews")
    product = models.ForeignKey(
        "catalog.Product", verbose_name="商品", on_delete=models.PROTECT, related_name="reviews"
    )
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="reviews"
    )
    rating = models.PositiveSmallIntegerField(verbose_name="评分")
    text = models.CharField(verbose_name="内容", max_length=500, blank=True)
    images = models.JSONField(verbose_name="图片", default=list, blank=True)
    is_hidden = models.BooleanField(verbose_name="已隐藏", default=False)
    reply = models.CharField(verbose_name="回复", max_length=500, blank=True)
    replied_by = models.CharField(verbose_name="回复人", max_length=64, blank=True)
    replied_at = models.DateTimeField(verbose_name="回复时间", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="评价时间", auto_now_add=True)

    class Meta:
        verbose_name = "评价"
        verbose_name_plural = "评价"
        ordering = ["-id"]
        permissions = [
            ("reply_review", "可以回复评价"),
            ("moderate_review", "可以隐藏或显示评价"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(rating__gte=1, rating__lte=5), name="review_rating_1_5"),
        ]
        indexes = [models.Index(fields=["product", "is_hidden", "-id"], name="review_product_idx")]

    def __str__(self) -> str:
        return f"{self.product_id} {self.rating}★ #{self.pk}"
