"""What staff edit on the storefront without a release: home-page blocks (banners, navigation
icons, hot searches, notices), articles (文章资讯) in categories, and the customers' favourites.

Pictures are ``ImageField``s: stored through the shop's storage (``default_storage``, local
media or S3) under their storage name, and shown as absolute URLs by
``apps.files.services.public_url``.
"""

from django.db import models


class HomeBlock(models.Model):
    """What every home-page block has: its place (``sort``, ascending), a switch, and an
    optional time window (Shanghai time in the admin) outside which it is not shown."""

    sort = models.IntegerField(verbose_name="排序", default=0, help_text="小的在前")
    is_active = models.BooleanField(verbose_name="启用", default=True)
    starts_at = models.DateTimeField(verbose_name="开始时间", null=True, blank=True, help_text="空 = 立即")
    ends_at = models.DateTimeField(verbose_name="结束时间", null=True, blank=True, help_text="空 = 长期")

    class Meta:
        abstract = True
        ordering = ["sort", "id"]


class Banner(HomeBlock):
    image = models.ImageField(verbose_name="图片", upload_to="content/banners/", max_length=200)
    link = models.CharField(
        verbose_name="跳转链接", max_length=300, blank=True, help_text="小程序页面路径，如 /pages/product/index?id=1"
    )

    class Meta(HomeBlock.Meta):
        verbose_name = "首页轮播图"
        verbose_name_plural = "首页轮播图"

    def __str__(self) -> str:
        return self.link or self.image.name


class NavItem(HomeBlock):
    title = models.CharField(verbose_name="标题", max_length=16)
    icon = models.ImageField(verbose_name="图标", upload_to="content/nav/", max_length=200)
    link = models.CharField(verbose_name="跳转链接", max_length=300, blank=True)

    class Meta(HomeBlock.Meta):
        verbose_name = "首页导航"
        verbose_name_plural = "首页导航"

    def __str__(self) -> str:
        return self.title


class HotSearch(HomeBlock):
    word = models.CharField(verbose_name="热搜词", max_length=32)

    class Meta(HomeBlock.Meta):
        verbose_name = "热门搜索"
        verbose_name_plural = "热门搜索"

    def __str__(self) -> str:
        return self.word


class Notice(HomeBlock):
    text = models.CharField(verbose_name="公告", max_length=200)

    class Meta(HomeBlock.Meta):
        verbose_name = "首页公告"
        verbose_name_plural = "首页公告"

    def __str__(self) -> str:
        return self.text


class ArticleCategory(models.Model):
    name = models.CharField(verbose_name="名称", max_length=32, unique=True)
    sort = models.IntegerField(verbose_name="排序", default=0)

    class Meta:
        verbose_name = "文章分类"
        verbose_name_plural = "文章分类"
        ordering = ["sort", "id"]

    def __str__(self) -> str:
        return self.name


class Article(models.Model):
    """An article (文章资讯). ``content`` is kept as staff typed it; the API sanitizes it on the way
    out (``apps.content.articles.safe_html``). ``views`` is the flushed count; views since the
    last flush wait in Redis (``apps.content.article_views``)."""

    class Status(models.TextChoices):
        DRAFT = "draft", "草稿"  # staff only
        PUBLISHED = "published", "已发布"  # listed from published_at on

    category = models.ForeignKey(
        ArticleCategory, verbose_name="分类", on_delete=models.PROTECT, related_name="articles"
    )
    title = models.CharField(verbose_name="标题", max_length=100)
    cover = models.ImageField(verbose_name="封面", upload_to="content/articles/", max_length=200, blank=True)
    summary = models.CharField(verbose_name="摘要", max_length=300, blank=True)
    content = models.TextField(verbose_name="正文（HTML）", blank=True)
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.DRAFT)
    published_at = models.DateTimeField(verbose_name="发布时间", null=True, blank=True, help_text="空 = 发布时自动填写")
    views = models.PositiveIntegerField(verbose_name="阅读数", default=0)  # flushed from Redis by beat
    products = models.ManyToManyField("catalog.Product", verbose_name="关联商品", blank=True, related_name="articles")
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "文章"
        verbose_name_plural = "文章"
        ordering = ["-published_at", "-id"]
        indexes = [
            # The list: published, newest first, optionally in one category.
            models.Index(fields=["status", "-published_at"], name="article_status_published_idx"),
        ]

    def __str__(self) -> str:
        return self.title


class Favourite(models.Model):
    """A product a customer keeps; UNIQUE (customer, product): adding twice keeps one row."""

    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="favourites"
    )
    product = models.ForeignKey(
        "catalog.Product", verbose_name="商品", on_delete=models.CASCADE, related_name="favourites"
    )
    created_at = models.DateTimeField(verbose_name="收藏时间", auto_now_add=True)

    class Meta:
        verbose_name = "收藏"
        verbose_name_plural = "收藏"
        constraints = [models.UniqueConstraint(fields=["customer", "product"], name="favourite_customer_product_uniq")]
        indexes = [models.Index(fields=["customer", "-id"], name="favourite_customer_newest_idx")]

    def __str__(self) -> str:
        return f"{self.customer_id} ♥ {self.product_id}"


class ArticleViewsFlush(models.Model):
    """One flush of the Redis view counts, by its Redis key (UNIQUE): written in the same
    transaction as the views it added, so a key is never added twice
    (``apps.content.article_views``)."""

    key = models.CharField(verbose_name="Redis 键", max_length=200, unique=True)
    views = models.PositiveIntegerField(verbose_name="阅读数", default=0)
    created_at = models.DateTimeField(verbose_name="时间", auto_now_add=True)

    class Meta:
        verbose_name = "阅读数落库记录"
        verbose_name_plural = "阅读数落库记录"

    def __str__(self) -> str:
        return self.key
