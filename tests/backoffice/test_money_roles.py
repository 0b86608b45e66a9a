"""Money actions in the back office by role (apps/backoffice/roles.py MONEY_ACTIONS): each role
may, may within a limit, or is refused with who may; the pages say who may; a confirmation page
comes before money moves (改价, withdrawal approval); 立即对账 starts the worker's reconciliation.
The limits themselves are the services' (tests/payments/test_staff_limits.py)."""

import datetime as dt

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse
from django.utils import timezone

from apps.backoffice.roles import MONEY_ACTIONS, role_hints, sync_roles, who_may
from apps.distribution import withdrawals
from apps.distribution.models import LedgerEntry, TransferBill, Withdrawal
from apps.orders.models import AfterSale, Order, OrderEvent
from apps.payments import reconciliation
from apps.payments.models import ReconciliationRun, Refund
from apps.payments.tasks import reconcile_day

pytestmark = pytest.mark.django_db

SALES = "/admin/orders/aftersale/"
WITHDRAWALS = "/admin/distribution/withdrawal/"


def messages_of(response) -> list[str]:
    return [m.message for m in response.context["messages"]]


def test_who_may_is_read_from_the_roles():
    sync_roles(Group, Permission)
    assert who_may("price") == "改价：运营（±10 % 以内）、财务"
    assert who_may("refund") == "同意退款：客服（¥200.00 以内）、财务"
    assert [who_may(key) for key in ("reject_refund", "batch_refund", "withdrawal", "reconcile")] == [
        "拒绝退款：财务",
        "批量退款：财务",
        "审核提现：财务",
        "立即对账：财务",
    ]
    assert set(MONEY_ACTIONS) == {"price", "refund", "reject_refund", "batch_refund", "withdrawal", "reconcile"}


def test_hints_name_who_may_for_each_role(role_client):
    def keys(role):
        return [(h["key"], h["allowed"]) for h in role_hints(role_client(role).user, list(MONEY_ACTIONS))]

    assert keys("财务") == []  # finance does them all, without a limit
    assert keys("客服") == [
        ("price", False),
        ("refund", True),  # within the limit
        ("reject_refund", False),
        ("batch_refund", False),
        ("withdrawal", False),
        ("reconcile", False),
    ]
    assert ("price", True) in keys("运营") and ("refund", False) in keys("运营")


def test_service_approves_at_the_limit_in_the_admin_and_is_told_who_may_above(
    role_client, requested_refund, django_capture_on_commit_callbacks
):
    service, finance = role_client("客服"), role_client("财务")
    at_limit, over = requested_refund(20000), requested_refund(20001)
    page = service.get(SALES).content.decode()
    assert 'value="approve"' in page and 'value="reject"' not in page
    assert "同意退款：客服（¥200.00 以内）、财务" in page and "拒绝退款：财务" in page and "disabled" in page
    one = service.get(reverse("admin:orders_aftersale_change", args=[over.pk])).content.decode()
    assert 'id="role-hints"' in one and "同意退款：客服（¥200.00 以内）、财务" in one  # the request's own page too

    with django_capture_on_commit_callbacks(execute=False):
        done = service.post(SALES, {"action": "approve", "_selected_action": [at_limit.pk, over.pk]}, follow=True)
    assert f"{at_limit.refund_no}: 已同意，退款 200.00 元已提交" in messages_of(done)
    assert f"{over.refund_no}: 未同意：超过 ¥200.00 的退款需财务审核。" in messages_of(done)
    assert [s.status for s in AfterSale.objects.filter(pk__in=[at_limit.pk, over.pk]).order_by("pk")] == [
        "approved",
        "requested",
    ]
    assert list(Refund.objects.values_list("refund_fen", flat=True)) == [20000]

    assert "同意退款：" not in finance.get(SALES).content.decode()  # finance may, no line
    with django_capture_on_commit_callbacks(execute=False):
        finance.post(SALES, {"action": "approve", "_selected_action": [over.pk]}, follow=True)
    assert sorted(Refund.objects.values_list("refund_fen", flat=True)) == [20000, 20001]


def test_operations_cannot_approve_a_refund_from_the_admin(role_client, requested_refund):
    sale = requested_refund(100)
    ops = role_client("运营")
    assert 'value="approve"' not in ops.get(SALES).content.decode()
    ops.post(SALES, {"action": "approve", "_selected_action": [sale.pk]}, follow=True)
    assert AfterSale.objects.get(pk=sale.pk).status == "requested" and not Refund.objects.exists()


@pytest.fixture
def unpaid(buyer, make_sku, place_order, wechat):
    """An unpaid order of goods 100.00 yuan, no freight (10 % = 10.00 yuan)."""
    order = place_order(buyer.api, items=[(make_sku(price_fen=10000), 1)])
    return Order.objects.get(order_no=order["order_no"])


def test_order_page_says_who_may_change_the_price(role_client, unpaid):
    url = reverse("admin:orders_order_change", args=[unpaid.pk])
    service = role_client("客服").get(url).content.decode()
    assert 'id="price-form"' not in service and "改价：运营（±10 % 以内）、财务" in service
    assert '<button type="button" class="bo-button bo-button-plain" disabled' in service
    ops = role_client("运营").get(url).content.decode()
    assert 'id="price-form"' in ops and "改价：运营（±10 % 以内）、财务" in ops
    finance = role_client("财务").get(url).content.decode()
    assert 'id="price-form"' in finance and "改价：" not in finance


def test_price_change_confirmation_then_once_within_the_limit(role_client, unpaid):
    ops = role_client("运营")
    url = reverse("admin:orders_order_price", args=[unpaid.pk])
    assert ops.get(url).status_code == 302  # GET: back to the order, nothing changes
    confirm = ops.post(url, {"pay_yuan": "90.00", "reason": "老顾客"})
    page = confirm.content.decode()
    assert confirm.status_code == 200 and "确认改价" in page
    assert "<td>100.00</td>" in page and "<td>90.00</td>" in page and "<td>-10.00</td>" in page  # old, new, adjust
    assert "返回（不做任何更改）" in page and reverse("admin:orders_order_change", args=[unpaid.pk]) in page
    assert Order.objects.get(pk=unpaid.pk).pay_fen == 10000  # the first POST moved nothing

    done = ops.post(url, {"pay_yuan": "90.00", "reason": "老顾客", "confirm": "1"}, follow=True)
    assert f"{unpaid.order_no}：已改价 100.00 元 → 90.00 元" in messages_of(done)
    ops.post(url, {"pay_yuan": "90.00", "reason": "老顾客", "confirm": "1"})  # a double click: same amount
    assert Order.objects.get(pk=unpaid.pk).pay_fen == 9000
    assert OrderEvent.objects.filter(order=unpaid, note__startswith="改价").count() == 1

    refused = ops.post(url, {"pay_yuan": "89.99", "reason": "老顾客"}, follow=True)  # refused before confirming
    assert f"{unpaid.order_no}：未改价：改价超过商品金额的 ±10 %（¥10.00），需财务操作。" in messages_of(refused)
    forced = ops.post(url, {"pay_yuan": "89.99", "reason": "老顾客", "confirm": "1"}, follow=True)
    assert "需财务操作" in messages_of(forced)[0] and Order.objects.get(pk=unpaid.pk).pay_fen == 9000

    finance = role_client("财务")
    finance.post(url, {"pay_yuan": "50.00", "reason": "清仓", "confirm": "1"})
    assert Order.objects.get(pk=unpaid.pk).pay_fen == 5000
    assert role_client("客服").post(url, {"pay_yuan": "49.00", "reason": "x", "confirm": "1"}).status_code == 403
    assert Order.objects.get(pk=unpaid.pk).pay_fen == 5000


@pytest.fixture
def pending_withdrawal(make_customer):
    """A pending withdrawal of 43.21 yuan by a distributor named 小林."""
    from apps.distribution import ledger, referral

    customer = make_customer()
    type(customer).objects.filter(pk=customer.pk).update(nickname="小林")
    distributor = referral.distributor_for(customer_id=customer.pk)
    ledger.ledger_book(distributor_id=distributor.pk, reason=LedgerEntry.Reason.RELEASE, ref="seed", available=5000)
    return withdrawals.withdrawal_request(customer_id=customer.pk, amount_fen=4321)


def test_withdrawal_approval_shows_amount_payee_channel_then_transfers_once(
    role_client, pending_withdrawal, django_capture_on_commit_callbacks
):
    w = pending_withdrawal
    finance = role_client("财务")
    confirm = finance.post(WITHDRAWALS, {"action": "approve", "_selected_action": [w.pk]})
    page = confirm.content.decode()
    assert confirm.status_code == 200 and "确认批准并转账" in page
    for text in (
        w.withdrawal_no,
        "43.21",
        "小林",
        w.distributor.customer.openid,
        "微信商家转账到零钱",
        "合计转出 43.21 元",
    ):
        assert text in page, text
    assert f'href="{WITHDRAWALS}"' in page  # 返回: the list, nothing changed
    assert Withdrawal.objects.get(pk=w.pk).status == "pending" and not TransferBill.objects.exists()

    with django_capture_on_commit_callbacks(execute=False) as sent:
        finance.post(WITHDRAWALS, {"action": "approve", "_selected_action": [w.pk], "confirm": "1"})
        again = finance.post(
            WITHDRAWALS, {"action": "approve", "_selected_action": [w.pk], "confirm": "1"}, follow=True
        )
    assert Withdrawal.objects.get(pk=w.pk).status == "approved"
    assert list(TransferBill.objects.values_list("out_bill_no", "amount_fen")) == [(w.withdrawal_no, 4321)]
    assert len(sent) == 1  # one transfer sent after commit
    assert f"{w.withdrawal_no}: 未批准：提现单 {w.withdrawal_no} 不是待审核状态。" in messages_of(again)


def test_withdrawal_page_says_who_may_and_others_cannot_approve(django_user_model, pending_withdrawal):
    from django.test import Client

    viewer = django_user_model.objects.create_user("viewer", password="pw-123456", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_withdrawal"))  # looks, no role decides
    sync_roles(Group, Permission)
    ops = Client()
    ops.force_login(viewer)
    page = ops.get(WITHDRAWALS).content.decode()
    assert "审核提现：财务" in page and 'value="approve"' not in page
    ops.post(WITHDRAWALS, {"action": "approve", "_selected_action": [pending_withdrawal.pk], "confirm": "1"})
    assert Withdrawal.objects.get(pk=pending_withdrawal.pk).status == "pending" and not TransferBill.objects.exists()


def test_finance_reconciles_a_day_from_the_back_office(
    role_client, buyer, make_sku, place_order, wechat, monkeypatch, django_capture_on_commit_callbacks
):
    today = timezone.localdate()
    order = place_order(buyer.api, items=[(make_sku(price_fen=15900), 1)])
    assert (
        buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code
        == 200
    )
    wechat.control.pay(order["order_no"])  # WeChat took the money; its notification never came
    monkeypatch.setattr(reconciliation, "beijing_today", lambda: today + dt.timedelta(days=1))  # today's bill is out
    finance, now_url = role_client("财务"), reverse("admin:payments_reconciliationrun_now")
    listing = finance.get(reverse("admin:payments_reconciliationrun_changelist")).content.decode()
    assert 'id="reconcile-now-link"' in listing
    form = finance.get(now_url).content.decode()
    assert f'value="{today.isoformat()}"' in form  # yesterday of the (moved) Beijing today

    with django_capture_on_commit_callbacks(execute=False) as queued:
        started = finance.post(now_url, {"bill_date": today.isoformat()}, follow=True)
    run = ReconciliationRun.objects.get(bill_date=today)
    assert (run.status, run.started_by, run.running_since is not None, len(queued)) == (
        "running",
        finance.user.username,
        True,
        1,
    )
    assert started.redirect_chain[-1][0] == reverse("admin:payments_reconciliationrun_change", args=[run.pk])
    assert "对账中（开始于" in started.content.decode()

    assert reconcile_day(today.isoformat()) == "differences"  # what the worker runs
    run.refresh_from_db()
    assert (run.status, run.running_since, len(run.differences)) == ("differences", None, 1)
    page = finance.get(reverse("admin:payments_reconciliationrun_change", args=[run.pk])).content.decode()
    assert "有差异" in page and order["order_no"] in page and "微信有、本地无" in page


def test_reconcile_now_is_finance_only_and_refuses_today(role_client, django_capture_on_commit_callbacks):
    now_url = reverse("admin:payments_reconciliationrun_now")
    ops = role_client("运营")
    assert ops.get(now_url).status_code == 403 and ops.post(now_url, {"bill_date": "2026-11-30"}).status_code == 403
    assert not ReconciliationRun.objects.exists()
    finance = role_client("财务")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        today = finance.post(now_url, {"bill_date": reconciliation.beijing_today().isoformat()})
        bad = finance.post(now_url, {"bill_date": "昨天"})
    assert "只能对账今天以前的日期" in today.content.decode() and "日期格式不正确" in bad.content.decode()
    assert not ReconciliationRun.objects.exists() and not queued


def test_reconcile_start_service_keeps_the_last_result_while_running(role_client, django_capture_on_commit_callbacks):
    day = reconciliation.previous_day()
    ReconciliationRun.objects.create(bill_date=day, status="ok", wechat_fen=100, local_fen=100)
    finance = role_client("财务").user
    with django_capture_on_commit_callbacks(execute=False) as queued:
        run = reconciliation.reconcile_start(bill_date=day, user=finance)
    assert (run.status, run.wechat_fen, run.running_since is not None, len(queued)) == ("ok", 100, True, 1)
    from apps.payments.staff_limits import StaffForbidden

    with pytest.raises(StaffForbidden, match="^没有对账的权限，需财务操作。$"):
        reconciliation.reconcile_start(bill_date=day, user=role_client("客服").user)


def test_withdrawal_service_names_who_may(role_client, pending_withdrawal):
    for role in ("运营", "客服"):
        with pytest.raises(withdrawals.PermissionDenied) as refused:
            withdrawals.withdrawal_approve(withdrawal_no=pending_withdrawal.withdrawal_no, user=role_client(role).user)
        assert (refused.value.message, refused.value.status) == ("没有审核提现的权限，需财务审核。", 403)
    assert Withdrawal.objects.get(pk=pending_withdrawal.pk).status == "pending" and not TransferBill.objects.exists()
    done = withdrawals.withdrawal_approve(withdrawal_no=pending_withdrawal.withdrawal_no, user=role_client("财务").user)
    assert done.status == "approved" and TransferBill.objects.get().amount_fen == 4321
