"""Reviews of completed order lines: one per line, rating 1-5, text, up to 6 images."""

from django.db import models
from django.db.models import Q


class Review(models.Model):
    """A customer's review of one line of a completed order (UNIQUE line: one review each).

    ``images`` are URLs of our uploads (``apps.files``). Hidden reviews are not shown and do not
    count in the product's ``review_count`` / ``rating_total`` (moved with F() by the services).
    """

    MAX_IMAGES = 6

    line = models.OneToOneField("orders.OrderLine", on_delete=models.PROTECT, related_name="review")
    order = models.ForeignKey("orders.Order", on_delete=models.PROTECT, related_name="reviews")
    product = models.ForeignKey("catalog.Product", on_delete=models.PROTECT, related_name="reviews")
    customer = models.ForeignKey("accounts.Customer", on_delete=models.PROTECT, related_name="reviews")
    rating = models.PositiveSmallIntegerField()
    text = models.CharField(max_length=500, blank=True)
    images = models.JSONField(default=list, blank=True)
    is_hidden = models.BooleanField(default=False)
    reply = models.CharField(max_length=500, blank=True)
    replied_by = models.CharField(max_length=64, blank=True)
    replied_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        permissions = [
            ("reply_review", "Can reply to reviews"),
            ("moderate_review", "Can hide or show reviews"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(rating__gte=1, rating__lte=5), name="review_rating_1_5"),
        ]
        indexes = [models.Index(fields=["product", "is_hidden", "-id"], name="review_product_idx")]

    def __str__(self) -> str:
        return f"{self.product_id} {self.rating}★ #{self.pk}"
