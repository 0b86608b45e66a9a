"""The storefront's admin pages render; the article page previews the sanitized HTML."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_content_admin_pages_render(admin_client, make_article):
    from apps.content.models import Banner

    Banner.objects.create(image="demo/b.png", link="/x")
    article = make_article(content="<p onclick=x>安全</p>")
    for name in (
        "content_banner",
        "content_navitem",
        "content_hotsearch",
        "content_notice",
        "content_article",
        "content_articlecategory",
        "content_favourite",
        "stores_store",
        "stores_pickupverification",
    ):
        assert admin_client.get(reverse(f"admin:{name}_changelist")).status_code == 200, name
    page = admin_client.get(reverse("admin:content_article_change", args=[article.pk])).content.decode()
    assert "<p>安全</p>" in page
