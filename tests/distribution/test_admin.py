"""The back office's withdrawal queue: approve / reject (with a reason) / query, through the
services and the decide_withdrawal permission; pages in Chinese with yuan; CSV exports."""

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from apps.distribution import withdrawals
from apps.distribution.models import Channel, Distributor, TransferBill, Withdrawal

pytestmark = pytest.mark.django_db

URL = "/admin/distribution/withdrawal/"


def staff(*codenames, view=True):
    user = User.objects.create_user(f"s{User.objects.count()}", password="pw", is_staff=True)
    perms = (
        list(Permission.objects.filter(content_type__app_label="distribution", codename__startswith="view_"))
        if view
        else []
    )
    perms += list(Permission.objects.filter(codename__in=codenames))
    user.user_permissions.set(perms)
    client = Client()
    client.force_login(user)
    return client


def test_finance_approves_and_rejects_from_the_queue(earner, django_capture_on_commit_callbacks):
    a, b = earner(5000), earner(3000)
    wa = withdrawals.withdrawal_request(customer_id=a.pk, amount_fen=4321)
    wb = withdrawals.withdrawal_request(customer_id=b.pk, amount_fen=3000)
    finance = staff("decide_withdrawal")
    page = finance.get(URL + "?status__exact=pending").content.decode()
    assert wa.withdrawal_no in page and "43.21" in page and "待审核" in page

    viewer = staff()
    denied = viewer.post(URL, {"action": "approve", "_selected_action": [wa.pk]})
    assert Withdrawal.objects.get(pk=wa.pk).status == "pending" and denied.status_code in (200, 302, 403)

    confirm = finance.post(URL, {"action": "approve", "_selected_action": [wa.pk]})  # the confirmation page first
    assert "确认批准并转账" in confirm.content.decode() and Withdrawal.objects.get(pk=wa.pk).status == "pending"
    with django_capture_on_commit_callbacks(execute=False):
        finance.post(URL, {"action": "approve", "_selected_action": [wa.pk], "confirm": "1"})
    assert Withdrawal.objects.get(pk=wa.pk).status == "approved"
    assert TransferBill.objects.filter(out_bill_no=wa.withdrawal_no).count() == 1

    form = finance.post(URL, {"action": "reject", "_selected_action": [wb.pk]})
    assert "驳回原因" in form.content.decode() and Withdrawal.objects.get(pk=wb.pk).status == "pending"
    finance.post(URL, {"action": "reject", "_selected_action": [wb.pk], "apply": "1", "text": "资料不全"})
    wb.refresh_from_db()
    assert (wb.status, wb.reason) == ("rejected", "资料不全")
    assert Distributor.objects.get(customer=b).available_fen == 3000

    finance.post(URL, {"action": "query_transfer", "_selected_action": [wa.pk]})
    assert Withdrawal.objects.get(pk=wa.pk).status == "wait_confirm"

    export = finance.post(URL, {"action": "export_csv", "_selected_action": [wa.pk, wb.pk]})
    text = export.content.decode("utf-8-sig")
    assert "提现单号" in text and "43.21" in text and wb.withdrawal_no in text


def test_distribution_pages_open_in_chinese(earner, chain, buy):
    a, b, c = chain
    buy(c)
    Channel.objects.create(code="POSTER1", name="海报")
    boss = Client()
    User.objects.create_superuser("boss", password="pw")
    boss.login(username="boss", password="pw")
    for path in (
        "distributor",
        "commission",
        "ledgerentry",
        "withdrawal",
        "transferbill",
        "channel",
        "commissionsettings",
        "productcommission",
        "promotioncode",
    ):
        page = boss.get(f"/admin/distribution/{path}/")
        assert page.status_code == 200, path
    distributor = Distributor.objects.get(customer=b)
    detail = boss.get(f"/admin/distribution/distributor/{distributor.pk}/change/").content.decode()
    assert "一级团队" in detail and "10.00" in detail
    assert "待审核提现" in boss.get("/admin/").content.decode()


def test_channel_code_image_from_the_admin(wechat, v3_sandbox):
    channel = Channel.objects.create(code="EXPO", name="展会")
    ops = staff("change_channel")
    ops.post("/admin/distribution/channel/", {"action": "make_images", "_selected_action": [channel.pk]})
    assert Channel.objects.get(pk=channel.pk).image.endswith(".png")
