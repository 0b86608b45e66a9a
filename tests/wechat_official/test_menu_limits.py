"""The menu's rules as WeChat's menu/create states them, checked before anything is sent: byte
lengths at their exact boundary (a Chinese character is 3 bytes), counts, each type's fields,
errors keyed by the field they concern; menu_save keeps only each type's own fields."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from apps.backoffice.roles import sync_roles
from apps.wechat_official import menus, services
from apps.wechat_official.models import Menu
from starmall.errors import InvalidInput

APPID = "wx8d5f3c1a2b4e6f70"


def errors_of(buttons) -> dict[str, str]:
    with pytest.raises(InvalidInput) as caught:
        menus.menu_clean(buttons)
    return caught.value.detail["fields"]


def click(name: str, key: str = "k") -> dict:
    return {"name": name, "type": "click", "key": key}


def test_top_name_16_bytes_passes_17_is_refused_in_chinese():
    assert len("五个汉字五a".encode()) == 16
    assert menus.menu_clean([click("五个汉字五a")]) == [click("五个汉字五a")]
    errors = errors_of([click("五个汉字五ab")])
    assert errors == {"0.name": "名称最多 16 字节（一个汉字 3 字节），现在 17 字节。"}
    assert errors_of([click("六个汉字六个")]) == {"0.name": "名称最多 16 字节（一个汉字 3 字节），现在 18 字节。"}


def test_sub_name_60_bytes_passes_61_is_refused():
    twenty = "二" * 20  # 60 bytes
    ok = [{"name": "更多", "sub_button": [click(twenty)]}]
    assert menus.menu_clean(ok)[0]["sub_button"][0]["name"] == twenty
    errors = errors_of([{"name": "更多", "sub_button": [click(twenty + "x")]}])
    assert errors == {"0.sub.0.name": "名称最多 60 字节（一个汉字 3 字节），现在 61 字节。"}


def test_key_128_and_url_1024_bytes_at_the_boundary():
    key = "键" * 42 + "ab"  # 126 + 2 = 128 bytes
    url = "https://example.com/" + "a" * (1024 - 20)
    assert len(url.encode()) == 1024
    buttons = [click("商城", key), {"name": "网页", "type": "view", "url": url}]
    assert menus.menu_clean(buttons) == buttons
    errors = errors_of([click("商城", key + "c"), {"name": "网页", "type": "view", "url": url + "b"}])
    assert errors == {
        "0.key": "事件 key最多 128 字节（一个汉字 3 字节），现在 129 字节。",
        "1.url": "网页链接最多 1024 字节（一个汉字 3 字节），现在 1025 字节。",
    }


def test_counts_types_and_fields_each_in_their_place():
    assert errors_of([]) == {"menu": "一级菜单应为 1 到 3 个。"}
    assert errors_of([click(str(i)) for i in range(4)]) == {"menu": "一级菜单应为 1 到 3 个。"}
    six = {"name": "更多", "sub_button": [click(f"子{i}") for i in range(6)]}
    assert errors_of([six]) == {"0.sub": "每个一级菜单最多 5 个子菜单。"}
    errors = errors_of(
        [
            {"name": "", "type": "click", "key": ""},
            {"name": "小程序", "type": "miniprogram", "appid": "wxABC", "pagepath": "", "url": "example.com"},
            {"name": "更多", "sub_button": [{"name": "无类型"}, {"name": "扫码", "type": "scancode_push"}]},
        ]
    )
    assert errors == {
        "0.name": "请填写名称。",
        "0.key": "请填写事件 key。",
        "1.appid": "小程序 appid 应为 wx 加 16 位小写十六进制字符。",
        "1.pagepath": "请填写小程序页面。",
        "1.url": "网页链接应以 http:// 或 https:// 开头。",
        "2.sub.0.type": "请选择菜单类型。",
        "2.sub.1.key": "请填写事件 key。",
    }


def test_only_each_types_own_fields_are_kept():
    buttons = [
        {"name": " 商城 ", "type": "view", "url": "https://example.com/", "key": "left over", "appid": APPID},
        {"name": "更多", "type": "click", "key": "x", "sub_button": [click("价格", "价格")]},
    ]
    assert menus.menu_clean(buttons) == [
        {"name": "商城", "type": "view", "url": "https://example.com/"},
        {"name": "更多", "sub_button": [click("价格", "价格")]},
    ]


@pytest.mark.django_db
def test_menu_save_writes_the_checked_menu_and_refuses_without_permission():
    sync_roles(Group, Permission)
    users = get_user_model().objects
    official = users.create_user("official", is_staff=True)
    official.groups.add(Group.objects.get(name="公众号"))
    ops = users.create_user("ops", is_staff=True)
    ops.groups.add(Group.objects.get(name="运营"))
    mini = {"name": "商城", "type": "miniprogram", "appid": APPID, "pagepath": "pages/index", "url": "https://a.cn/"}
    menu = services.menu_save(menu_id=None, name="十二月", buttons=[mini | {"key": "x"}], by=official)
    assert Menu.objects.get(pk=menu.pk).buttons == [mini]
    with pytest.raises(services.Forbidden):
        services.menu_save(menu_id=menu.pk, name="改", buttons=[mini], by=ops)
    with pytest.raises(InvalidInput) as caught:
        services.menu_save(menu_id=menu.pk, name="改", buttons=[mini | {"name": "七个汉字的名字"}], by=official)
    assert caught.value.detail["fields"] == {"0.name": "名称最多 16 字节（一个汉字 3 字节），现在 21 字节。"}
    assert Menu.objects.get(pk=menu.pk).name == "十二月"  # nothing half-written


@pytest.mark.django_db
def test_admin_editor_posts_json_the_server_checks(client):
    import html
    import json

    client.force_login(get_user_model().objects.create_superuser("boss", password="pw"))
    page = client.get("/admin/wechat_official/menu/add/").content.decode()
    assert 'id="menu-editor"' in page and "wechat_official/menu_editor.js" in page
    bad = [click("五个汉字五ab"), {"name": "网页", "type": "view", "url": "ftp://x"}]
    response = client.post("/admin/wechat_official/menu/add/", {"name": "十二月", "buttons": json.dumps(bad)})
    assert response.status_code == 200 and not Menu.objects.exists()
    config = response.content.decode().split('data-config="', 1)[1].split('"', 1)[0]
    assert json.loads(html.unescape(config))["errors"] == {
        "0.name": "名称最多 16 字节（一个汉字 3 字节），现在 17 字节。",
        "1.url": "网页链接应以 http:// 或 https:// 开头。",
    }
    assert "菜单有 2 处需要修改。" in response.content.decode()
    trailing = '[{"name": "商城", "type": "click", "key": "k"},]'
    response = client.post("/admin/wechat_official/menu/add/", {"name": "十二月", "buttons": trailing})
    assert "菜单数据无法读取" in response.content.decode() and not Menu.objects.exists()
    good = [click("商城", "shop") | {"url": "https://left.over/"}]
    response = client.post("/admin/wechat_official/menu/add/", {"name": "十二月", "buttons": json.dumps(good)})
    assert response.status_code == 302
    assert Menu.objects.get().buttons == [click("商城", "shop")]


def test_menu_saved_in_the_editor_is_pushed_as_stored(client, wechat, settings, db):
    import json

    import requests

    settings.WECHAT_OFFICIAL_API_BASE = wechat.url
    sync_roles(Group, Permission)
    official = get_user_model().objects.create_user("official", password="pw", is_staff=True)
    official.groups.add(Group.objects.get(name="公众号"))
    client.force_login(official)
    mini = {"name": "商城", "type": "miniprogram", "appid": APPID, "pagepath": "pages/index", "url": "https://a.cn/"}
    more = {
        "name": "更多",
        "sub_button": [click("价格", "价格"), {"name": "帮助", "type": "view", "url": "https://a.cn/h"}],
    }
    response = client.post("/admin/wechat_official/menu/add/", {"name": "十二月", "buttons": json.dumps([mini, more])})
    assert response.status_code == 302
    menu = Menu.objects.get()
    response = client.post(
        "/admin/wechat_official/menu/", {"action": "push", "_selected_action": [str(menu.pk)], "index": "0"}
    )
    assert response.status_code == 302
    pushed = requests.get(f"{wechat.url}sandbox/official", timeout=5).json()["menus"]
    assert [m["button"] for m in pushed] == [[mini, more]]
    assert Menu.objects.get().pushed_at is not None
