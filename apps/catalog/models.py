"""Categories, products (goods or a teacher's consultation), SKUs with stock, teachers."""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q


class Kind(models.TextChoices):
    GOODS = "goods", "实物商品"  # shipped to an address
    CONSULTATION = "consultation", "咨询预约"  # a teacher's time: one slot per order


class Category(models.Model):
    name = models.CharField(verbose_name="名称", max_length=32)
    parent = models.ForeignKey(
        "self", verbose_name="上级分类", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    kind = models.CharField(verbose_name="类型", max_length=16, choices=Kind.choices, default=Kind.GOODS)
    sort = models.IntegerField(verbose_name="排序", default=0)

    class Meta:
        verbose_name = "分类"
        verbose_name_plural = "分类"
        ordering = ["sort", "id"]

    def __str__(self) -> str:
        return self.name


class Teacher(models.Model):
    """A consultant whose time is sold as slots (``apps.appointments``) through ``product``."""

    name = models.CharField(verbose_name="姓名", max_length=32)
    title = models.CharField(verbose_name="头衔", max_length=64, blank=True)
    bio = models.TextField(verbose_name="简介", blank=True)
    product = models.OneToOneField(
        "Product", verbose_name="咨询商品", null=True, blank=True, on_delete=models.SET_NULL, related_name="teacher"
    )
    is_active = models.BooleanField(verbose_name="启用", default=True)  # slots are generated only for active teachers
    # The teacher card (GET /api/v1/teachers/{id}); specialties: a list of short labels.
    photo_url = models.CharField(verbose_name="照片", max_length=300, blank=True)
    specialties = models.JSONField(verbose_name="擅长", default=list, blank=True)
    # Who the teacher is when signed in: in the mini-program (their WeChat customer: schedule,
    # their side of the chats) and in the admin (a staff user: only their own slots and chats).
    customer = models.OneToOneField(
        "accounts.Customer",
        verbose_name="小程序账号（顾客）",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="teacher",
    )
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        verbose_name="后台账号",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="teacher",
    )

    class Meta:
        verbose_name = "老师"
        verbose_name_plural = "老师"

    def __str__(self) -> str:
        return f"{self.name}（{self.title}）" if self.title else self.name


class Product(models.Model):
    category = models.ForeignKey(Category, verbose_name="分类", on_delete=models.PROTECT, related_name="products")
    name = models.CharField(verbose_name="名称", max_length=100)
    kind = models.CharField(verbose_name="类型", max_length=16, choices=Kind.choices, default=Kind.GOODS)
    description = models.TextField(verbose_name="描述", blank=True)
    cover_url = models.CharField(verbose_name="封面图", max_length=300, blank=True)
    images = models.JSONField(verbose_name="图片", default=list, blank=True)  # list of image URLs
    # The spec builder's names and values in staff's order: [{"name": "颜色", "values": ["天青", "月白"]}]
    # (apps.catalog.sku_matrix); empty = read from the SKUs (products made before the builder).
    spec_tree = models.JSONField(verbose_name="规格", default=list, blank=True)
    is_active = models.BooleanField(verbose_name="上架", default=True)  # only active products are listed and sold
    sales = models.PositiveIntegerField(verbose_name="销量", default=0)  # units paid for; grows with F() on payment
    # Visible reviews (apps.reviews): count and sum of ratings, moved with F() in the review's
    # transaction (posting, hiding, showing) so the product page reads them without a query.
    review_count = models.PositiveIntegerField(verbose_name="评价数", default=0)
    rating_total = models.PositiveIntegerField(verbose_name="评分合计", default=0)
    sort = models.IntegerField(verbose_name="排序", default=0)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    # Storefront tags staff set (the list's ``tag=hot`` / ``tag=recommended``).
    is_hot = models.BooleanField(verbose_name="热卖", default=False)
    is_recommended = models.BooleanField(verbose_name="推荐", default=False)
    # How shipping it is charged; null = the shop's default template. By name: catalog imports
    # nothing from shipping (orders asks shipping at confirm).
    freight_template = models.ForeignKey(
        "shipping.FreightTemplate",
        verbose_name="运费模板",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="products",
        help_text="空 = 默认运费模板",
    )

    class Meta:
        verbose_name = "商品"
        verbose_name_plural = "商品"
        ordering = ["sort", "id"]
        indexes = [
            # The storefront list's orders (``apps.catalog.selectors.product_list`` ``sort=``) over
            # products on sale; the tags as partial indexes (few products carry one).
            models.Index(fields=["is_active", "-sales", "id"], name="product_active_sales_idx"),
            models.Index(fields=["is_active", "-created_at", "-id"], name="product_active_new_idx"),
            models.Index(fields=["sort", "id"], condition=models.Q(is_hot=True), name="product_hot_idx"),
            models.Index(
                fields=["sort", "id"], condition=models.Q(is_recommended=True), name="product_recommended_idx"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def rating(self) -> float | None:
        """Average rating of the visible reviews, one decimal (API.md); None without reviews."""
        if not self.review_count:
            return None
        return round(self.rating_total / self.review_count + 1e-9, 1)


class Sku(models.Model):
    """One sellable spec combination of a product: its own price and stock.

    ``stock`` changes only through ``apps.catalog.stock`` (conditional UPDATEs); the CHECK
    constraint is the last line of defence against overselling.
    """

    product = models.ForeignKey(Product, verbose_name="商品", on_delete=models.PROTECT, related_name="skus")
    specs = models.JSONField(verbose_name="规格", default=dict, blank=True)  # e.g. {"颜色": "青瓷", "容量": "350ml"}
    price_fen = models.PositiveIntegerField(verbose_name="价格")  # fen
    # fen: the price while the customer is a paid member (SVIP; apps.members.pricing), or None
    member_price_fen = models.PositiveIntegerField(
        verbose_name="会员价",
        null=True,
        blank=True,
        help_text="付费会员（SVIP）的价格；空 = 无会员价",
        validators=[MinValueValidator(1)],
    )
    stock = models.IntegerField(verbose_name="库存", default=0)  # units on hand
    code = models.CharField(verbose_name="商家编码", max_length=64, blank=True)  # merchant's own SKU code
    # The picture of this combination (storage name like Product.cover_url); empty = the product's cover.
    image_url = models.CharField(verbose_name="规格图片", max_length=300, blank=True)
    is_active = models.BooleanField(verbose_name="启用", default=True)
    weight_g = models.PositiveIntegerField(
        verbose_name="重量（克）", default=0, help_text="克/件（按重量计费的运费模板用）"
    )  # grams per unit
    volume_cm3 = models.PositiveIntegerField(
        verbose_name="体积（立方厘米）", default=0, help_text="立方厘米/件（按体积计费的运费模板用）"
    )  # cm³ per unit

    class Meta:
        verbose_name = "SKU"
        verbose_name_plural = "SKU"
        ordering = ["product_id", "id"]
        permissions = [("change_stock", "可以调整 SKU 库存（增减，经库存服务）")]
        constraints = [models.CheckConstraint(condition=Q(stock__gte=0), name="sku_stock_gte_0")]

    def __str__(self) -> str:
        specs = " / ".join(f"{k}:{v}" for k, v in self.specs.items())
        return f"{self.product.name} [{specs}]" if specs else self.product.name
