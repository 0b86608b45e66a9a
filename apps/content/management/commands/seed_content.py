import io

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from apps.catalog.models import Product
from apps.content.models import Article, ArticleCategory, Banner, HotSearch, NavItem, Notice

BANNER_NAME = "content/demo/banner-1.png"  # beside, not in, the products' demo/ pictures
ARTICLES = [
    (
        "如何挑选一只好盖碗",
        "从釉色、胎质到出汤，三分钟看懂盖碗。",
        "<h2>看釉色</h2><p>青瓷以<strong>天青</strong>为上，釉面温润如玉。</p>"
        "<h2>试出汤</h2><ul><li>盖与碗贴合</li><li>出汤不烫手</li></ul>"
        '<p>更多茶器见<a href="https://mp.weixin.qq.com/">公众号</a>。</p>',
    ),
    (
        "冬至择日小识",
        "冬至一阳生：节气、宜忌与团圆。",
        "<p>冬至是二十四节气之一，古人以冬至为<em>一阳来复</em>之始。</p>"
        "<blockquote>冬至大如年。</blockquote><p>可在黄历中查看每日宜忌。</p>",
    ),
]


class Command(BaseCommand):
    help = (
        "Demo storefront content, idempotent: a banner, navigation icons, hot searches, a notice, "
        "an article category with two published articles linked to products."
    )

    def handle(self, *args, **options):
        self._banner_picture()
        with transaction.atomic():
            Banner.objects.get_or_create(link="/pages/flash-sale/index", defaults={"image": BANNER_NAME, "sort": 0})
            for sort, (title, link, icon) in enumerate(
                [
                    ("茶器", "/pages/category/index?id=1", "demo/product-1.png"),
                    ("咨询", "/pages/teachers/index", "demo/product-11.png"),
                    ("文章", "/pages/articles/index", "demo/product-5.png"),
                    ("门店", "/pages/stores/index", "demo/product-8.png"),
                ]
            ):
                NavItem.objects.get_or_create(title=title, defaults={"link": link, "icon": icon, "sort": sort})
            for sort, word in enumerate(["盖碗", "线香", "择日"]):
                HotSearch.objects.get_or_create(word=word, defaults={"sort": sort})
            Notice.objects.get_or_create(text="到店自提免运费，下单时选择「到店自提」即可。")
            category, _ = ArticleCategory.objects.get_or_create(name="茶与国学")
            products = list(Product.objects.filter(is_active=True).order_by("id")[:2])
            for title, summary, content in ARTICLES:
                article, created = Article.objects.get_or_create(
                    title=title,
                    defaults={
                        "category": category,
                        "summary": summary,
                        "content": content,
                        "cover": "demo/product-2.png",
                        "status": Article.Status.PUBLISHED,
                        "published_at": timezone.now(),
                    },
                )
                if created:
                    article.products.set(products)
        self.stdout.write(f"demo content: {Banner.objects.count()} banners, {Article.objects.count()} articles")

    def _banner_picture(self) -> None:
        """A 750x300 banner (drawn with Pillow) in the media storage, once."""
        if default_storage.exists(BANNER_NAME):
            return
        from PIL import Image, ImageDraw

        image = Image.new("RGB", (750, 300), (36, 99, 92))
        draw = ImageDraw.Draw(image)
        for x in range(0, 750, 6):
            draw.line([(x, 300), (x + 300, 0)], fill=(40 + x // 12, 110, 100))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        default_storage.save(BANNER_NAME, ContentFile(buffer.getvalue()))
