"""Coupons issued to a tag (``apps.crm.tag_coupons``)."""

from django.db import models


class TagCouponIssue(models.Model):
    """Staff issue a coupon template to every customer carrying ``tag``. The row is the outbox
    (written by the admin's transaction, pushed to Celery after commit, re-pushed by beat until
    DONE); the task walks the tag's customers in id order from ``cursor``."""

    class Status(models.TextChoices):
        PENDING = "pending", "待发放"
        RUNNING = "running", "发放中"
        DONE = "done", "已完成"

    tag = models.ForeignKey("members.Tag", verbose_name="标签", on_delete=models.PROTECT, related_name="+")
    template = models.ForeignKey(
        "marketing.CouponTemplate", verbose_name="券模板", on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    cursor = models.BigIntegerField(verbose_name="进度（顾客 ID）", default=0)  # last customer id handled
    granted = models.PositiveIntegerField(verbose_name="已发放", default=0)
    skipped = models.PositiveIntegerField(verbose_name="未发放（券已发完）", default=0)
    created_by = models.CharField(verbose_name="操作人", max_length=150, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    finished_at = models.DateTimeField(verbose_name="完成时间", null=True, blank=True)

    class Meta:
        verbose_name = "按标签发券"
        verbose_name_plural = "按标签发券"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"按标签发券 #{self.pk}"


class TagCouponGrant(models.Model):
    """A customer got the issue's coupon: UNIQUE (issue, customer), written in the transaction
    that makes the coupon, so a retried or parallel run never gives one customer two."""

    issue = models.ForeignKey(TagCouponIssue, verbose_name="发券", on_delete=models.CASCADE, related_name="grants")
    customer = models.ForeignKey("accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="+")
    coupon = models.ForeignKey("accounts.Coupon", verbose_name="优惠券", on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(verbose_name="发放时间", auto_now_add=True)

    class Meta:
        verbose_name = "按标签发券明细"
        verbose_name_plural = "按标签发券明细"
        constraints = [models.UniqueConstraint(fields=["issue", "customer"], name="tagcoupongrant_once")]

    def __str__(self) -> str:
        return f"{self.issue_id}/{self.customer_id}"
