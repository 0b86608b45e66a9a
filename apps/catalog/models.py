"""Categories, products (goods or a teacher's consultation), SKUs with stock, teachers."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class Kind(models.TextChoices):
    GOODS = "goods", "实物商品"  # shipped to an address
    CONSULTATION = "consultation", "咨询预约"  # a teacher's time: one slot per order


class Category(models.Model):
    name = models.CharField(max_length=32)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.GOODS)
    sort = models.IntegerField(default=0)

    class Meta:
        ordering = ["sort", "id"]
        verbose_name_plural = "categories"

    def __str__(self) -> str:
        return self.name


class Teacher(models.Model):
    """A consultant whose time is sold as slots (``apps.appointments``) through ``product``."""

    name = models.CharField(max_length=32)
    title = models.CharField(max_length=64, blank=True)
    bio = models.TextField(blank=True)
    product = models.OneToOneField(
        "Product", null=True, blank=True, on_delete=models.SET_NULL, related_name="teacher"
    )
    is_active = models.BooleanField(default=True)  # slots are generated only for active teachers
    # The teacher card (GET /api/v1/teachers/{id}); specialties: a list of short labels.
    photo_url = models.CharField(max_length=300, blank=True)
    specialties = models.JSONField(default=list, blank=True)
    # Who the teacher is when signed in: in the mini-program (their WeChat customer: schedule,
    # their side of the chats) and in the admin (a staff user: only their own slots and chats).
    customer = models.OneToOneField(
        "accounts.Customer", null=True, blank=True, on_delete=models.SET_NULL, related_name="teacher"
    )
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="teacher"
    )

    def __str__(self) -> str:
        return f"{self.name}（{self.title}）" if self.title else self.name


class Product(models.Model):
    category = models.ForeignKey(Category, on_delete=models.PROTECT, related_name="products")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.GOODS)
    description = models.TextField(blank=True)
    cover_url = models.CharField(max_length=300, blank=True)
    images = models.JSONField(default=list, blank=True)  # list of image URLs
    is_active = models.BooleanField(default=True)  # only active products are listed and sold
    sales = models.PositiveIntegerField(default=0)  # units paid for; grows with F() on payment
    sort = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sort", "id"]

    def __str__(self) -> str:
        return self.name


class Sku(models.Model):
    """One sellable spec combination of a product: its own price and stock.

    ``stock`` changes only through ``apps.catalog.services`` (conditional UPDATEs); the CHECK
    constraint is the last line of defence against overselling.
    """

    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="skus")
    specs = models.JSONField(default=dict, blank=True)  # e.g. {"颜色": "青瓷", "容量": "350ml"}
    price_fen = models.PositiveIntegerField()  # fen
    stock = models.IntegerField(default=0)  # units on hand
    code = models.CharField(max_length=64, blank=True)  # merchant's own SKU code
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["product_id", "id"]
        verbose_name = "SKU"
        permissions = [("change_stock", "Can change SKU stock (relatively, through the stock service)")]
        constraints = [models.CheckConstraint(condition=Q(stock__gte=0), name="sku_stock_gte_0")]

    def __str__(self) -> str:
        specs = " / ".join(f"{k}:{v}" for k, v in self.specs.items())
        return f"{self.product.name} [{specs}]" if specs else self.product.name
