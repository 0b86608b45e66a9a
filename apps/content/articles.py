"""Reads of articles (文章资讯) for the mini-program: published ones only, HTML sanitized."""

from __future__ import annotations

from django.db.models import Min, Q, QuerySet
from django.utils import timezone

from apps.catalog.models import Product
from apps.content.models import Article, ArticleCategory


def article_categories() -> QuerySet[ArticleCategory]:
    return ArticleCategory.objects.order_by("sort", "id")


def article_list(*, category_id: int | None = None) -> QuerySet[Article]:
    """Published articles whose ``published_at`` has come, newest first; a category narrows."""
    qs = Article.objects.filter(status=Article.Status.PUBLISHED, published_at__lte=timezone.now())
    if category_id:
        qs = qs.filter(category_id=category_id)
    return qs.order_by("-published_at", "-id")


def article_get(*, article_id: int) -> Article | None:
    """A published article (as :func:`article_list` would list it), or None."""
    return article_list().filter(pk=article_id).first()


def article_products(article: Article) -> QuerySet[Product]:
    """The article's linked products that are on sale, with ``min_price_fen`` as in lists."""
    return (
        article.products.filter(is_active=True)
        .annotate(min_price_fen=Min("skus__price_fen", filter=Q(skus__is_active=True)))
        .order_by("sort", "id")
    )
