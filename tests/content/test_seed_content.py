"""Demo storefront content: loaded twice, kept once; the demo home page and articles are served."""

import pytest
from django.core.management import call_command

from apps.content.models import Article, ArticleCategory, Banner, NavItem

pytestmark = pytest.mark.django_db


def test_seed_content_is_idempotent_and_served(client, make_sku, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    product = make_sku().product
    call_command("seed_content")
    call_command("seed_content")
    assert (Banner.objects.count(), ArticleCategory.objects.count(), Article.objects.count()) == (1, 1, 2)
    assert NavItem.objects.count() == 4
    assert (tmp_path / "content" / "demo" / "banner-1.png").exists()
    home = client.get("/api/v1/home").json()
    assert len(home["banners"]) == 1 and home["hot_search"] and home["notices"]
    page = client.get("/api/v1/articles").json()
    assert page["count"] == 2
    detail = client.get(f"/api/v1/articles/{page['results'][0]['id']}").json()
    assert [p["id"] for p in detail["products"]] == [product.pk]
