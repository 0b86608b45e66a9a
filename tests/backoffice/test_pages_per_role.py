"""Pages per role: the sidebar grouped by staff task (one mapping, apps/backoffice/navigation.py),
money on the dashboard for the owner and finance only, a teacher's own week only, the return flow
finishable by operations, and the shop's name from its settings row everywhere."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import RequestFactory

from apps.backoffice import navigation
from apps.backoffice.roles import sync_roles
from starmall.models import ShopProfile

pytestmark = pytest.mark.django_db
PASSWORD = "pw-role-1"


@pytest.fixture
def role_client(client, django_user_model):
    """``role_client(role)`` -> the test client logged in as a new staff user of that role."""

    def login(role: str, username: str | None = None):
        sync_roles(Group, Permission)
        user = django_user_model.objects.create_user(username or f"u-{role}", password=PASSWORD, is_staff=True)
        user.groups.add(Group.objects.get(name=role))
        client.force_login(user)
        return client

    return login


def _groups(user) -> list[str]:
    request = RequestFactory().get("/admin/")
    request.user = user
    return [group["title"] for group in navigation.sidebar(request)[1:]]


def _items(user, group: str) -> list[str]:
    request = RequestFactory().get("/admin/")
    request.user = user
    return next((item["title"] for item in g["items"]) for g in navigation.sidebar(request) if g["title"] == group)


def test_sidebar_is_grouped_by_task_in_the_shops_order(django_user_model):
    boss = django_user_model.objects.create_superuser("boss", password=PASSWORD)
    groups = _groups(boss)
    tasks = ["订单", "商品", "营销", "咨询", "财务", "系统"]
    assert [group for group in groups if group in tasks] == tasks
    assert groups == [title for title, _ in navigation.GROUPS]  # every group holds a page, in the declared order
    assert "订单" in list(_items(boss, "订单")) and "退款申请" in list(_items(boss, "订单"))
    assert {"商品", "SKU", "评价", "运费模板"} <= set(_items(boss, "商品"))
    assert {"预约时段", "老师周历", "黄历月历", "老师"} <= set(_items(boss, "咨询"))
    assert {"支付", "退款", "导出数据"} <= set(_items(boss, "财务"))
    assert {"告警", "店铺设置", "用户"} <= set(_items(boss, "系统"))


def test_an_unmapped_app_still_appears_in_a_group_named_after_it(django_user_model, monkeypatch):
    monkeypatch.delitem(navigation.APP_GROUPS, "almanac")  # as a newly added app would be
    boss = django_user_model.objects.create_superuser("boss", password=PASSWORD)
    groups = _groups(boss)
    assert groups[-1] == "黄历" and list(_items(boss, "黄历")) == ["黄历", "黄历已载入范围"]


@pytest.mark.parametrize(
    ("role", "sees", "not_sees"),
    [
        ("运营", {"订单", "商品", "营销"}, {"财务", "系统"}),
        ("客服", {"订单", "咨询"}, {"商品", "营销"}),
        ("财务", {"订单", "财务"}, {"商品", "营销", "咨询"}),
        ("老师", {"咨询"}, {"订单", "商品", "营销", "财务", "系统"}),
    ],
)
def test_each_role_sees_its_own_groups(role_client, django_user_model, role, sees, not_sees):
    role_client(role)
    groups = set(_groups(django_user_model.objects.get(username=f"u-{role}")))
    assert sees <= groups and not (not_sees & groups), groups


def test_the_rendered_sidebar_shows_the_groups(role_client):
    html = role_client("老师").get("/admin/").content.decode()
    assert "老师周历" in html and "预约时段" in html
    assert "/admin/orders/order/" not in html and "/admin/payments/" not in html


@pytest.mark.parametrize(("role", "money"), [("运营", False), ("客服", False), ("财务", True)])
def test_revenue_is_on_the_dashboard_for_finance_only(role_client, role, money):
    html = role_client(role).get("/admin/").content.decode()
    assert ("销售额（元）" in html) is money
    assert ("客单价（元）" in html) is money
    if role != "客服":  # customer service sees the to-do list and counts
        assert 'id="dashboard"' in html and "订单数" in html
    assert "MANUAL" not in html


def test_the_owner_sees_revenue(client, django_user_model):
    django_user_model.objects.create_superuser("boss", password=PASSWORD)
    client.login(username="boss", password=PASSWORD)
    html = client.get("/admin/").content.decode()
    assert "销售额（元）" in html and '"revenue": [' in html


def test_a_teacher_sees_only_their_own_week(role_client, consultation, django_user_model):
    from apps.catalog.models import Product, Teacher

    teacher = consultation.teacher
    other = Teacher.objects.create(
        name="王婉清",
        product=Product.objects.create(category=teacher.product.category, name="王婉清咨询", kind="consultation"),
    )
    staff = role_client("老师")
    Teacher.objects.filter(pk=teacher.pk).update(user=django_user_model.objects.get(username="u-老师"))
    own = staff.get("/admin/backoffice/week/", {"teacher": teacher.pk})
    assert own.status_code == 200 and teacher.name in own.content.decode()
    assert other.name not in own.content.decode()  # not even in the teacher picker
    assert staff.get("/admin/backoffice/week/").status_code == 200  # default: their own
    assert staff.get("/admin/backoffice/week/", {"teacher": other.pk}).status_code == 403


def test_operations_can_finish_a_return(role_client, django_user_model):
    role_client("运营")
    ops = django_user_model.objects.get(username="u-运营")
    assert ops.has_perm("orders.receive_return")
    assert not ops.has_perm("orders.decide_aftersale")  # receiving is not deciding


def test_the_shop_name_comes_from_its_settings_row(client, django_user_model, settings):
    from apps.alerts.backends import WeComRobotBackend
    from starmall.shop import alert_tag, shop_name

    settings.SHOP_NAME = "星商城"
    assert shop_name() == "星商城" and alert_tag() == "【星商城 告警】"
    boss = django_user_model.objects.create_superuser("boss", password=PASSWORD)
    client.force_login(boss)
    assert "星商城 后台" in client.get("/admin/").content.decode()
    ShopProfile.objects.create(pk=1, name="青瓷小铺")
    assert shop_name() == "青瓷小铺"
    html = client.get("/admin/").content.decode()
    assert "青瓷小铺 后台" in html and "Starmall" not in re.sub(r"<script.*?</script>", "", html, flags=re.S)
    message = type("M", (), {"title": "退款失败", "text": "x", "kind_label": "退款", "time_text": "t", "key": "k"})()
    settings.ALERT_WECOM_MSGTYPE = "text"
    assert WeComRobotBackend().payload(message)["text"]["content"].startswith("【青瓷小铺 告警】退款失败")


def test_the_settings_page_saves_the_one_row(client, django_user_model):
    boss = django_user_model.objects.create_superuser("boss", password=PASSWORD)
    client.force_login(boss)
    assert client.get("/admin/starmall/shopprofile/").status_code == 200
    response = client.post("/admin/starmall/shopprofile/add/", {"name": "星商城"})
    assert response.status_code == 302
    assert list(ShopProfile.objects.values_list("pk", "name")) == [(1, "星商城")]
    assert client.get("/admin/starmall/shopprofile/add/").status_code == 403  # only one


def test_service_cannot_open_the_settings_page(role_client):
    assert role_client("客服").get("/admin/starmall/shopprofile/").status_code == 403


def test_no_shanghai_time_on_forms(client, django_user_model):
    boss = django_user_model.objects.create_superuser("boss", password=PASSWORD)
    client.force_login(boss)
    for url in ("/admin/marketing/coupontemplate/add/", "/admin/marketing/flashsale/add/"):
        html = client.get(url).content.decode()
        assert "上海时间" not in html and "北京时间" in html, url
