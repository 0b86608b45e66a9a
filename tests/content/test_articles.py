"""Articles: categories (bare array), the paginated list of published ones, the detail with
sanitized HTML and linked products, and views counted in Redis and flushed by beat."""

import datetime as dt
import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.content import article_views
from apps.content.models import Article, ArticleCategory, ArticleViewsFlush

pytestmark = pytest.mark.django_db


def test_categories_are_a_bare_array(client):
    second = ArticleCategory.objects.create(name="茶事", sort=2)
    first = ArticleCategory.objects.create(name="国学", sort=1)
    assert client.get("/api/v1/article-categories").json() == [
        {"id": first.pk, "name": "国学"},
        {"id": second.pk, "name": "茶事"},
    ]


def test_list_has_published_only_newest_first_by_category(client, make_article):
    now = timezone.now()
    older = make_article(title="旧文", published_at=now - dt.timedelta(days=2), summary="摘要")
    newer = make_article(title="新文", published_at=now - dt.timedelta(days=1))
    make_article(title="草稿", status=Article.Status.DRAFT)
    make_article(title="定时", published_at=now + dt.timedelta(days=1))
    other = make_article(title="茶文", category=ArticleCategory.objects.create(name="茶事"))
    response = client.get("/api/v1/articles", HTTP_AUTHORIZATION="Bearer expired")
    assert response.status_code == 200
    page = response.json()
    assert page["count"] == 3 and [a["id"] for a in page["results"]] == [other.pk, newer.pk, older.pk]
    row = page["results"][2]
    assert {"id", "title", "cover_url", "summary", "published_at", "views"} <= set(row)
    assert (row["title"], row["summary"], row["views"], row["cover_url"]) == ("旧文", "摘要", 0, "")
    assert row["published_at"].endswith("+08:00")
    by_category = client.get("/api/v1/articles", {"category": older.category_id}).json()
    assert [a["id"] for a in by_category["results"]] == [newer.pk, older.pk]
    assert client.get("/api/v1/articles", {"category": "x"}).json()["code"] == "invalid"


def test_detail_serves_sanitized_html_and_linked_products(client, make_article, make_sku):
    sku = make_sku(price_fen=3600)
    hidden = make_sku(name="下架品").product
    hidden.is_active = False
    hidden.save()
    article = make_article(
        content='<p onclick="steal()">好茶</p><script>alert(1)</script>'
        '<a href="javascript:alert(1)">点</a><img src=x onerror=alert(1)>',
        cover="demo/cover.png",
    )
    article.products.set([sku.product, hidden])
    data = client.get(f"/api/v1/articles/{article.pk}").json()
    assert data["content"] == '<p>好茶</p><a rel="noopener noreferrer">点</a><img>'
    assert [p["id"] for p in data["products"]] == [sku.product_id]
    assert data["products"][0]["min_price_fen"] == 3600
    assert data["cover_url"].endswith("demo/cover.png")
    assert Article.objects.get(pk=article.pk).content.startswith("<p onclick")  # stored as staff typed it


def test_detail_of_a_draft_or_unknown_is_404(client, make_article):
    draft = make_article(status=Article.Status.DRAFT)
    assert client.get(f"/api/v1/articles/{draft.pk}").json()["code"] == "not_found"
    assert client.get("/api/v1/articles/999999").status_code == 404


def test_views_count_without_a_write_and_flush_once(client, make_article):
    article = make_article()
    for expected in (1, 2, 3):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/api/v1/articles/{article.pk}").json()["views"] == expected
        assert not [q for q in queries if q["sql"].lstrip().upper().startswith(("UPDATE", "INSERT"))]
    assert Article.objects.get(pk=article.pk).views == 0
    assert client.get("/api/v1/articles").json()["results"][0]["views"] == 3  # pending ones shown
    assert article_views.article_views_flush() == 3
    assert article_views.article_views_flush() == 0  # twice: nothing more
    assert Article.objects.get(pk=article.pk).views == 3
    assert client.get("/api/v1/articles").json()["results"][0]["views"] == 3
    assert client.get(f"/api/v1/articles/{article.pk}").json()["views"] == 4


def test_flush_left_behind_by_a_dead_flush_is_added_once(make_article):
    from django_redis import get_redis_connection

    article = make_article()
    conn = get_redis_connection("default")
    # A flush renamed the pending hash and died before its UPDATE: the next one adds it.
    left = article_views._flushing_prefix() + "dead1"
    conn.hset(left, str(article.pk), 5)
    # Another died after its commit, before deleting its key: only the key goes.
    applied = article_views._flushing_prefix() + "dead2"
    conn.hset(applied, str(article.pk), 7)
    ArticleViewsFlush.objects.create(key=applied, views=7)
    article_views.article_view_count(article_id=article.pk)
    assert article_views.article_views_flush() == 6
    assert Article.objects.get(pk=article.pk).views == 6
    assert not conn.exists(left) and not conn.exists(applied)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_flushes_at_once_add_each_view_once(make_article):
    article = make_article()
    for _ in range(20):
        article_views.article_view_count(article_id=article.pk)
    barrier, results = threading.Barrier(2), []

    def flush():
        try:
            barrier.wait()
            results.append(article_views.article_views_flush())
        finally:
            connection.close()

    threads = [threading.Thread(target=flush) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [0, 20]
    assert Article.objects.get(pk=article.pk).views == 20
