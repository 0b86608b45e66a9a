"""The back office of 拼团 and 砍价: scheduling through the services' rules (yuan in, fen stored),
groups with their members, the end-now action (same permission as ``group_end``), dashboard
lines and exports."""

import datetime as dt

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from apps.backoffice import selectors_groups
from apps.marketing.models import BargainCampaign, Group, GroupBuy
from apps.orders.models import Order
from starmall.admin_money import yuan

pytestmark = pytest.mark.django_db


def _split(value, name):
    local = timezone.localtime(value)
    return {f"{name}_0": local.strftime("%Y-%m-%d"), f"{name}_1": local.strftime("%H:%M:%S")}


def _window(hours=48):
    starts_at = (timezone.now() + dt.timedelta(minutes=5)).replace(microsecond=0)
    return {**_split(starts_at, "starts_at"), **_split(starts_at + dt.timedelta(hours=hours), "ends_at")}


@pytest.fixture
def boss(client, django_user_model):
    django_user_model.objects.create_superuser("boss", password="pw-123456")
    client.login(username="boss", password="pw-123456")
    return client


def test_schedule_group_buy_and_bargain_in_yuan(boss, group_sku):
    response = boss.post(
        reverse("admin:marketing_groupbuy_add"),
        {
            "title": "两人团",
            "product": group_sku.product_id,
            "sku": group_sku.pk,
            "price_fen": yuan(6600),
            "stock": 5,
            "group_size": 2,
            "hours": 24,
            "limit_per_customer": 1,
            "simulate_min": 1,
            "is_active": "on",
            **_window(),
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    activity = GroupBuy.objects.get()
    assert (activity.price_fen, activity.stock, activity.group_size, activity.hours) == (6600, 5, 2, 24)
    refused = boss.post(
        reverse("admin:marketing_groupbuy_add"),
        {
            "title": "一人团",
            "product": group_sku.product_id,
            "sku": group_sku.pk,
            "price_fen": yuan(20000),
            "stock": 500,
            "group_size": 1,
            "hours": 24,
            "limit_per_customer": 1,
            "simulate_min": 1,
            "is_active": "on",
            **_window(),
        },
    )
    errors = refused.context["adminform"].form.errors
    assert {"price_fen", "stock", "group_size"} <= set(errors)
    response = boss.post(
        reverse("admin:marketing_bargaincampaign_add"),
        {
            "title": "砍一刀",
            "product": group_sku.product_id,
            "sku": group_sku.pk,
            "original_price_fen": yuan(10000),
            "floor_price_fen": yuan(100),
            "helpers_needed": 5,
            "hours": 24,
            "stock": 3,
            "limit_per_customer": 1,
            "is_active": "on",
            **_window(),
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert BargainCampaign.objects.get().floor_price_fen == 100
    assert boss.get(reverse("admin:marketing_groupbuy_change", args=[activity.pk])).status_code == 200


def test_group_pages_end_action_dashboard_and_export(
    boss,
    client,
    django_user_model,
    shopper,
    group_order,
    wechat_pay,
    make_group_buy,
    make_bargain,
    django_capture_on_commit_callbacks,
):
    activity = make_group_buy(size=3)
    _, api = shopper()
    _, created = group_order(api, activity.sku, group_buy_id=activity.pk)
    order = created.json()
    wechat_pay(api, order["order_no"])
    group_id = order["group"]["group_id"]
    _, helper_api = shopper()
    campaign = make_bargain()
    bargain_no = api.post(f"/api/v1/bargains/{campaign.pk}/start").json()["bargain_no"]
    helper_api.post(f"/api/v1/bargain-records/{bargain_no}/help")

    page = boss.get(reverse("admin:marketing_group_change", args=[group_id]))
    assert page.status_code == 200 and order["order_no"] in page.content.decode()
    assert boss.get(reverse("admin:marketing_group_changelist")).status_code == 200
    record_page = boss.get(reverse("admin:marketing_bargainrecord_changelist"))
    assert bargain_no in record_page.content.decode()
    # the order of a forming group is not shipped; the back office says why
    shipped = boss.post(
        reverse("admin:orders_order_changelist"),
        {"action": "mark_shipped", "_selected_action": [Order.objects.get(order_no=order["order_no"]).pk]},
        follow=True,
    )
    assert "拼团尚未成团" in shipped.content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        ended = boss.post(
            reverse("admin:marketing_group_changelist"),
            {"action": "end_now", "_selected_action": [group_id]},
            follow=True,
        )
    assert "全额退款" in ended.content.decode()
    assert Group.objects.get(pk=group_id).status == "failed"
    assert Order.objects.get(order_no=order["order_no"]).status == "refunding"
    counts = selectors_groups.group_counts()
    assert (counts["failed_today"], counts["refunds_today"], counts["refund_fen_today"]) == (1, 1, order["pay_fen"])
    index = boss.get(reverse("admin:index")).content.decode()
    assert "今日未成团" in index and "拼团中" in index

    today = timezone.localdate().isoformat()
    export = boss.get(
        reverse("admin:backoffice_export"), {"kind": "groups", "start": today, "end": today, "fmt": "csv"}
    )
    text = b"".join(export.streaming_content).decode()
    assert order["order_no"] in text and "未成团" in text
    export = boss.get(
        reverse("admin:backoffice_export"), {"kind": "bargains", "start": today, "end": today, "fmt": "csv"}
    )
    assert bargain_no in b"".join(export.streaming_content).decode()


def test_end_action_needs_the_permission(client, django_user_model, shopper, group_order, wechat_pay, make_group_buy):
    activity = make_group_buy(size=2)
    _, api = shopper()
    _, created = group_order(api, activity.sku, group_buy_id=activity.pk)
    wechat_pay(api, created.json()["order_no"])
    group_id = created.json()["group"]["group_id"]
    viewer = django_user_model.objects.create_user("viewer", password="pw-123456", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_group", content_type__app_label="marketing"))
    client.login(username="viewer", password="pw-123456")
    client.post(reverse("admin:marketing_group_changelist"), {"action": "end_now", "_selected_action": [group_id]})
    assert Group.objects.get(pk=group_id).status == "forming"
