"""GET /home: the blocks staff switched on, in their order, within their windows, cached in
Redis and dropped when a block is saved or deleted."""

import datetime as dt

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.content.home import HOME_CACHE_KEY
from apps.content.models import Banner, HotSearch, NavItem, Notice

pytestmark = pytest.mark.django_db


def test_home_shows_blocks_in_order_within_their_windows(client, settings):
    now = timezone.now()
    Banner.objects.create(image="demo/b2.png", link="/pages/b2", sort=2)
    Banner.objects.create(image="demo/b1.png", link="/pages/b1", sort=1)
    Banner.objects.create(image="demo/off.png", link="/off", is_active=False)
    Banner.objects.create(image="demo/later.png", link="/later", starts_at=now + dt.timedelta(hours=1))
    Banner.objects.create(image="demo/over.png", link="/over", ends_at=now - dt.timedelta(minutes=1))
    NavItem.objects.create(title="文章", icon="demo/nav.png", link="/pages/articles")
    HotSearch.objects.create(word="盖碗", sort=1)
    HotSearch.objects.create(word="香", sort=0)
    Notice.objects.create(text="元旦发货安排", starts_at=now - dt.timedelta(days=1), ends_at=now + dt.timedelta(days=1))
    response = client.get("/api/v1/home", HTTP_AUTHORIZATION="Bearer not-a-token")
    assert response.status_code == 200  # public: a bad token is anonymous, never 401
    data = response.json()
    assert [b["link"] for b in data["banners"]] == ["/pages/b1", "/pages/b2"]
    assert data["banners"][0]["image_url"].startswith("http") and data["banners"][0]["image_url"].endswith(
        "demo/b1.png"
    )
    assert data["nav"] == [{"title": "文章", "icon_url": data["nav"][0]["icon_url"], "link": "/pages/articles"}]
    assert data["nav"][0]["icon_url"].endswith("demo/nav.png")
    assert data["hot_search"] == ["香", "盖碗"]
    assert data["notices"] == ["元旦发货安排"]


def test_home_is_cached_and_dropped_when_staff_edit(client):
    banner = Banner.objects.create(image="demo/b1.png", link="/one")
    assert [b["link"] for b in client.get("/api/v1/home").json()["banners"]] == ["/one"]
    assert cache.get(HOME_CACHE_KEY) is not None
    with CaptureQueriesContext(connection) as queries:
        client.get("/api/v1/home")
    assert len(queries) == 0  # from Redis alone
    banner.link = "/two"
    banner.save()
    assert cache.get(HOME_CACHE_KEY) is None
    assert [b["link"] for b in client.get("/api/v1/home").json()["banners"]] == ["/two"]
    banner.delete()
    assert client.get("/api/v1/home").json()["banners"] == []


def test_home_window_applies_at_read_time_from_the_cache(client):
    soon = timezone.now() + dt.timedelta(seconds=1)
    Notice.objects.create(text="限时公告", starts_at=soon)
    assert client.get("/api/v1/home").json()["notices"] == []
    from apps.content.home import home_page

    assert home_page(now=soon + dt.timedelta(seconds=1))["notices"] == ["限时公告"]


def test_home_without_redis_answers_from_the_database(client, monkeypatch):
    Notice.objects.create(text="公告")

    def down(*args, **kwargs):
        raise ConnectionError("redis down")

    monkeypatch.setattr(cache, "get", down)
    assert client.get("/api/v1/home").json()["notices"] == ["公告"]
