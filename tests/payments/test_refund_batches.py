"""Batch refunds: one after-sale request and refund per order through the same
services, once per order and reason, each failure isolated, retried and visible."""

import datetime as dt
import logging

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied
from django.db import OperationalError
from django.utils import timezone

from apps.accounts.models import Address, Customer
from apps.catalog.models import Sku
from apps.orders.models import AfterSale, Order
from apps.payments import refund_batches, refunds
from apps.payments.models import Payment, Refund, RefundBatch, RefundBatchItem

pytestmark = pytest.mark.django_db
Item = RefundBatchItem


@pytest.fixture
def finance(django_user_model):
    user = django_user_model.objects.create_user("finance1", password="pw-123456", is_staff=True)
    user.user_permissions.add(Permission.objects.get(content_type__app_label="payments", codename="batch_refund"))
    return django_user_model.objects.get(pk=user.pk)  # fresh permission cache


@pytest.fixture
def shop(make_customer, make_api, make_sku, place_order, wechat, deliver):
    """``shop.order(method, pay=True)``: a goods order of 2 x 60.00 yuan (free shipping from 99.00)
    of a customer with 1,000.00 yuan balance, paid by WeChat (notification delivered) or the balance."""
    customer = make_customer(balance_fen=100_000)
    wechat.state.upsert_user(customer.openid)
    api = make_api(customer)
    address = Address.objects.create(
        customer=customer,
        name="张三",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        district="西湖区",
        detail="文三路100号",
        is_default=True,
    )
    sku = make_sku(price_fen=6000, stock=10)

    class Shop:
        pass

    def order(method: str = "wechat", pay: bool = True) -> Order:
        placed = place_order(api, items=[(sku, 2)], address=address)
        if pay:
            response = api.post(f"/api/v1/orders/{placed['order_no']}/pay", {"method": method}, format="json")
            assert response.status_code == 200, response.json()
            if method == "wechat":
                wechat.control.pay(placed["order_no"])
                deliver()
        return Order.objects.get(order_no=placed["order_no"])

    shop = Shop()
    shop.customer, shop.api, shop.sku, shop.order = customer, api, sku, order
    return shop


def run_items(batch: RefundBatch, now=None) -> dict[str, str]:
    """Run each queued item's task once (as the worker would); order_no -> status."""
    return {
        item.order_no: refund_batches.refund_batch_item_run(item_id=item.pk, now=now)
        for item in batch.items.filter(status=Item.Status.QUEUED).order_by("pk")
    }


def items(batch: RefundBatch) -> list[tuple]:
    return list(batch.items.order_by("pk").values_list("order_no", "status", "amount_fen", "note"))


def test_batch_of_three_paid_orders_refunds_each_through_the_same_services(
    shop, finance, wechat, deliver, queued, django_capture_on_commit_callbacks
):
    first, second, by_balance = shop.order("wechat"), shop.order("wechat"), shop.order("balance")
    assert Customer.objects.get(pk=shop.customer.pk).balance_fen == 100_000 - 12000
    assert Sku.objects.get(pk=shop.sku.pk).stock == 4
    with django_capture_on_commit_callbacks(execute=True):
        batch = refund_batches.refund_batch_create(
            order_nos=[first.order_no, second.order_no, by_balance.order_no], reason="商品下架，全部退款", user=finance
        )
    assert queued("payments") == ["apps.payments.tasks.refund_batch_item_run"] * 3  # one task per order
    assert items(batch) == [(o.order_no, "queued", 12000, "") for o in (first, second, by_balance)]

    with django_capture_on_commit_callbacks(execute=True):
        assert run_items(batch) == {o.order_no: "refunding" for o in (first, second, by_balance)}
    assert queued("payments")[3:] == ["apps.payments.tasks.refund_run"] * 3  # the refunds, after commit
    sales = list(
        AfterSale.objects.order_by("pk").values_list("order__order_no", "reason", "amount_fen", "status", "decided_by")
    )
    assert sales == [
        (o.order_no, "商品下架，全部退款", 12000, "approved", f"staff:finance1 批量#{batch.pk}")
        for o in (first, second, by_balance)
    ]
    assert [Order.objects.get(pk=o.pk).status for o in (first, second, by_balance)] == ["refunding"] * 3
    assert (
        list(Payment.objects.filter(status="paid").order_by("pk").values_list("total_fee", "refunded_fen"))
        == [(12000, 12000)] * 3
    )

    # The refund worker, exactly as for a refund staff approved one by one.
    for item in batch.items.order_by("pk"):
        assert item.refund.out_refund_no == f"{item.order_no}R1" and item.after_sale.refund_no == f"{item.order_no}R1"
        refunds.refund_execute(refund_id=item.refund_id)
    assert [r["out_refund_no"] for r in wechat.control.refunds()] == [f"{first.order_no}R1", f"{second.order_no}R1"]
    assert items(batch)[2][1] == "refunded"  # the balance refund succeeded at once
    deliver()  # WeChat's refund notifications
    assert [s for _, s, _, _ in items(batch)] == ["refunded"] * 3
    assert list(Refund.objects.order_by("pk").values_list("status", "refund_fen")) == [("success", 12000)] * 3
    assert [Order.objects.get(pk=o.pk).status for o in (first, second, by_balance)] == ["refunded"] * 3
    assert AfterSale.objects.filter(status="refunded").count() == 3
    assert Customer.objects.get(pk=shop.customer.pk).balance_fen == 100_000  # the balance order's money is back
    assert Sku.objects.get(pk=shop.sku.pk).stock == 10  # every unit restocked once
    assert batch.items.exclude(finished_at=None).count() == 3


def test_same_order_in_a_second_batch_adds_no_work_and_no_second_refund(shop, finance):
    order, other = shop.order("balance"), shop.order("balance")
    one = refund_batches.refund_batch_create(order_nos=[order.order_no], reason="质量问题", user=finance)
    two = refund_batches.refund_batch_create(
        order_nos=[order.order_no, other.order_no, order.order_no], reason="质量问题", user=finance
    )
    assert items(two) == [
        (other.order_no, "queued", 12000, ""),
        (order.order_no, "skipped", 0, f"已在批次 #{one.pk}（排队中）中以同一原因退款，未重复添加"),
    ]
    assert Item.objects.filter(order=order).exclude(status="skipped").count() == 1
    run_items(one), run_items(two)
    run_items(two)  # a duplicate message does nothing
    for refund in Refund.objects.all():
        refunds.refund_execute(refund_id=refund.pk)
    assert Refund.objects.filter(order=order).count() == AfterSale.objects.filter(order=order).count() == 1
    assert Payment.objects.get(order=order).refunded_fen == 12000
    three = refund_batches.refund_batch_create(order_nos=[order.order_no], reason="质量问题", user=finance)
    assert items(three) == [
        (order.order_no, "skipped", 0, "订单状态为「已退款」，只有已支付、已发货或已完成的订单可以退款")
    ]
    assert Customer.objects.get(pk=shop.customer.pk).balance_fen == 100_000


def test_unrefundable_orders_are_skipped_with_the_reason_while_the_others_complete(shop, finance):
    good, unpaid, asked, changes = (
        shop.order("balance"),
        shop.order(pay=False),
        shop.order("balance"),
        shop.order("balance"),
    )
    shop.api.post(f"/api/v1/orders/{asked.order_no}/refund", {"reason": "不想要了", "amount_fen": 5000}, format="json")
    text = f"{good.order_no}\n{unpaid.order_no}，{asked.order_no} 20260101000000000000, {changes.order_no}"
    batch = refund_batches.refund_batch_create(
        order_nos=refund_batches.parse_order_nos(text), reason="活动取消", user=finance
    )
    assert items(batch) == [
        (good.order_no, "queued", 12000, ""),
        (changes.order_no, "queued", 12000, ""),
        (unpaid.order_no, "skipped", 0, "订单状态为「待支付」，只有已支付、已发货或已完成的订单可以退款"),
        (asked.order_no, "skipped", 0, f"已有处理中的退款申请 {asked.order_no}R1（待审核），请在「退款申请」中处理"),
        ("20260101000000000000", "skipped", 0, "没有这个订单号"),
    ]
    # The customer asks for a refund of `changes` before its task runs: the task checks again.
    shop.api.post(f"/api/v1/orders/{changes.order_no}/refund", {"reason": "不想要了"}, format="json")
    assert run_items(batch) == {good.order_no: "refunding", changes.order_no: "skipped"}
    assert (
        batch.items.get(order=changes).note
        == f"已有处理中的退款申请 {changes.order_no}R1（待审核），请在「退款申请」中处理（创建批次后订单已变化）"
    )
    refunds.refund_execute(refund_id=batch.items.get(order=good).refund_id)
    assert batch.items.get(order=good).status == "refunded"
    assert [Order.objects.get(pk=o.pk).status for o in (good, unpaid, asked, changes)] == [
        "refunded",
        "unpaid",
        "paid",
        "paid",
    ]
    assert list(AfterSale.objects.order_by("pk").values_list("order__order_no", "amount_fen", "status")) == [
        (asked.order_no, 5000, "requested"),
        (changes.order_no, 12000, "requested"),
        (good.order_no, 12000, "refunded"),
    ]
    assert Refund.objects.count() == 1


def test_a_reason_the_customer_used_for_a_refund_today_fails_the_item_instead_of_replaying_it(shop, finance):
    order = shop.order("balance")
    asked = shop.api.post(
        f"/api/v1/orders/{order.order_no}/refund", {"reason": "不想要了", "amount_fen": 6000}, format="json"
    )
    assert asked.status_code == 202
    refunds.refund_execute(
        refund_id=refunds.after_sale_approve(after_sale_id=AfterSale.objects.get().pk, actor="staff:t").pk
    )
    batch = refund_batches.refund_batch_create(order_nos=[order.order_no], reason="不想要了", user=finance)
    assert run_items(batch) == {order.order_no: "failed"}
    assert (
        batch.items.get().note
        == f"未退款：24 小时内已有同一原因的退款申请 {order.order_no}R1（已退款），请换一个原因再试"
    )
    assert (AfterSale.objects.count(), Refund.objects.count(), Payment.objects.get(order=order).refunded_fen) == (
        1,
        1,
        6000,
    )
    other = refund_batches.refund_batch_create(order_nos=[order.order_no], reason="缺货", user=finance)
    assert run_items(other) == {order.order_no: "refunding"}
    assert other.items.get().amount_fen == 6000  # what was left


def test_wechat_refusing_is_retried_then_failed_visibly_and_staff_retry_completes(
    shop, finance, wechat, deliver, caplog
):
    order, fine = shop.order("wechat"), shop.order("balance")
    batch = refund_batches.refund_batch_create(order_nos=[order.order_no, fine.order_no], reason="缺货", user=finance)
    run_items(batch)
    wechat.control.set_faults({"secapi/pay/refund": {"err_code": "BIZERR_NEED_RETRY", "count": 3}})
    now = timezone.now()
    with caplog.at_level(logging.ERROR, logger="apps.payments.refunds"):
        for wait in (0, 61, 61 + 301):  # the refund worker's own tries and back-off
            refunds.refunds_sweep(now=now + dt.timedelta(seconds=wait))
    failed = batch.items.get(order=order)
    assert (failed.status, failed.refund.status, failed.refund.attempts) == ("failed", "failed", 3)
    assert failed.note.startswith("退款失败：PayRejected") and "BIZERR_NEED_RETRY" in failed.note
    assert sum("ALERT refund" in r.getMessage() for r in caplog.records) == 1
    assert batch.items.get(order=fine).status == "refunded"  # the other order was not held up
    assert Order.objects.get(pk=fine.pk).status == "refunded"

    assert refund_batches.refund_batch_retry_failed(batch_id=batch.pk, user=finance) == {"refund": 1, "queued": 0}
    failed.refresh_from_db()
    assert (failed.status, failed.refund.status, failed.note) == ("refunding", "pending", "")
    assert refunds.refund_execute(refund_id=failed.refund_id) == "submitted"
    deliver()
    assert batch.items.get(order=order).status == "refunded"
    assert [r["out_refund_no"] for r in wechat.control.refunds()] == [f"{order.order_no}R1"]  # the same number
    assert Order.objects.get(pk=order.pk).status == "refunded"


def test_an_item_error_is_retried_with_back_off_isolated_then_failed_and_requeued(shop, finance, monkeypatch, caplog):
    broken, fine = shop.order("balance"), shop.order("balance")
    batch = refund_batches.refund_batch_create(order_nos=[broken.order_no, fine.order_no], reason="缺货", user=finance)
    real = refunds.refund_request

    def flaky(**kwargs):  # the database failing for one order only
        if kwargs["order_no"] == broken.order_no:
            raise OperationalError("could not serialize access")
        return real(**kwargs)

    monkeypatch.setattr(refunds, "refund_request", flaky)
    now = timezone.now()
    assert run_items(batch, now=now) == {broken.order_no: "queued", fine.order_no: "refunding"}
    item = batch.items.get(order=broken)
    assert (item.attempts, item.next_attempt_at) == (1, now + dt.timedelta(seconds=60))
    assert item.note == "第 1 次尝试失败，60 秒后重试：OperationalError: could not serialize access"
    assert refund_batches.refund_batch_item_run(item_id=item.pk, now=now + dt.timedelta(seconds=30)) == "queued"
    assert Item.objects.get(pk=item.pk).attempts == 1  # not due: not tried
    with caplog.at_level(logging.ERROR, logger="apps.payments.refund_batches"):
        assert refund_batches.refund_batch_item_run(item_id=item.pk, now=now + dt.timedelta(seconds=61)) == "queued"
        assert refund_batches.refund_batch_item_run(item_id=item.pk, now=now + dt.timedelta(seconds=362)) == "failed"
    item.refresh_from_db()
    assert (item.attempts, item.note) == (3, "尝试 3 次仍失败：OperationalError: could not serialize access")
    assert sum("ALERT refund batch" in r.getMessage() for r in caplog.records) == 1
    from apps.alerts.models import Alert

    alert = Alert.objects.get()  # one alert, keyed by the item
    assert (alert.key, alert.kind) == (f"refund_batch_item:{item.pk}:failed", "refund_failed")
    assert broken.order_no in alert.text
    assert AfterSale.objects.filter(order=broken).count() == 0 and Payment.objects.get(order=broken).refunded_fen == 0

    monkeypatch.setattr(refunds, "refund_request", real)  # fixed: staff retry the failed item
    assert refund_batches.refund_batch_retry_failed(batch_id=batch.pk, user=finance) == {"refund": 0, "queued": 1}
    assert refund_batches.refund_batch_item_run(item_id=item.pk) == "refunding"
    refunds.refund_execute(refund_id=Item.objects.get(pk=item.pk).refund_id)
    assert Item.objects.get(pk=item.pk).status == "refunded"
    assert Order.objects.get(pk=broken.pk).status == "refunded"


def test_sweep_pushes_again_the_items_still_queued(shop, finance, queued):
    order = shop.order("balance")
    batch = refund_batches.refund_batch_create(order_nos=[order.order_no], reason="缺货", user=finance)
    assert queued("payments") == []  # the push after commit never happened (no commit in this test)
    now = timezone.now()
    assert refund_batches.refund_batches_sweep(now=now) == 1
    assert queued("payments") == ["apps.payments.tasks.refund_batch_item_run"]
    refund_batches.refund_batch_item_run(item_id=batch.items.get().pk)
    assert refund_batches.refund_batches_sweep(now=now + dt.timedelta(minutes=10)) == 0  # refunding: nothing to push


def test_only_staff_with_the_permission_can_create_or_retry_a_batch(shop, django_user_model):
    order = shop.order("balance")
    clerk = django_user_model.objects.create_user("clerk", password="pw-123456", is_staff=True)
    clerk.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    with pytest.raises(PermissionDenied):
        refund_batches.refund_batch_create(order_nos=[order.order_no], reason="缺货", user=clerk)
    with pytest.raises(PermissionDenied):
        refund_batches.refund_batch_retry_failed(batch_id=1, user=clerk)
    assert (RefundBatch.objects.count(), Item.objects.count(), AfterSale.objects.count()) == (0, 0, 0)


def test_create_refuses_an_empty_reason_or_no_order(finance):
    from starmall.errors import InvalidInput

    with pytest.raises(InvalidInput):
        refund_batches.refund_batch_create(order_nos=["1"], reason="  ", user=finance)
    with pytest.raises(InvalidInput):
        refund_batches.refund_batch_create(order_nos=[" ", ""], reason="缺货", user=finance)
    assert RefundBatch.objects.count() == 0
    assert refund_batches.parse_order_nos(" 1\n2,3，4、5;2\t6 ") == ["1", "2", "3", "4", "5", "6"]
