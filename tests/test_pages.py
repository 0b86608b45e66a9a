"""The front page at ``/`` and the Chinese 404 page (starmall/pages.py)."""

from __future__ import annotations

import re

import pytest
from django.test import Client, override_settings


def _links(html: str) -> list[str]:
    return re.findall(r'<a href="([^"]+)"', html)


def test_front_page_names_the_shop_and_links_docs_admin_and_health(client, settings):
    settings.SHOP_NAME = "吉祥小铺"
    response = client.get("/")
    html = response.content.decode()
    assert (response.status_code, response["Content-Type"]) == (200, "text/html; charset=utf-8")
    assert "<title>吉祥小铺</title>" in html and "<h1>吉祥小铺</h1>" in html
    assert _links(html) == ["/api/docs/", "/admin/", "/healthz"]
    assert "接口文档" in html and "管理后台" in html and "健康检查" in html
    assert "<script" not in html
    assert client.post("/").status_code == 405


@pytest.mark.django_db
def test_the_admins_view_site_link_leads_to_the_front_page(boss):
    html = boss.get("/admin/").content.decode()
    link = re.search(r'<a href="([^"]*)"[^>]*>\s*查看站点\s*</a>', html)
    assert link is not None and link.group(1) == "/"
    assert boss.get(link.group(1)).status_code == 200


NOT_FOUND_PATHS = ["/nonexistent", "/shop/index.html", "/static/nothing.css"]


@pytest.mark.parametrize("debug", [True, False])
def test_unknown_non_api_path_is_the_chinese_404_page_with_or_without_debug(debug):
    with override_settings(DEBUG=debug):
        client = Client()  # loads the middleware under this DEBUG
        for path in NOT_FOUND_PATHS:
            response = client.get(path)
            html = response.content.decode()
            assert response.status_code == 404, path
            assert "<h1>页面不存在</h1>" in html and '<a href="/">返回首页</a>' in html, path
            assert "Page not found" not in html and "URLconf" not in html, path
        # CommonMiddleware still adds the slash before any 404.
        assert client.get("/admin").status_code == 301 and client.get("/admin")["Location"] == "/admin/"


def test_api_paths_keep_their_json_404_byte_for_byte():
    answers = {}
    for debug in (False, True):
        with override_settings(DEBUG=debug):
            response = Client().get("/api/v1/nonexistent")
            answers[debug] = (response.status_code, response["Content-Type"], response.content)
    assert answers[True] == answers[False]
    assert answers[True][:2] == (404, "application/json")
    assert (
        answers[True][2]
        == '{"code": "not_found", "message": "接口不存在。", "detail": {"path": "/api/v1/nonexistent"}}'.encode()
    )
