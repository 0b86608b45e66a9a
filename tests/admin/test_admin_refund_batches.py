"""Batch refunds in the back office: the order list's 批量退款 (confirmation, reason, the batch
page), the add page (pasted order numbers), counts per status, retry — all through the service
and ``payments.batch_refund`` (the finance role); nobody else changes anything."""

import pytest
from django.urls import reverse

from apps.orders.models import AfterSale, Order
from apps.payments import refund_batches, refunds
from apps.payments.models import Refund, RefundBatch, RefundBatchItem
from tests.admin.admin_helpers import action, request_refund, texts

pytestmark = pytest.mark.django_db


def nothing_changed() -> bool:
    return not (
        RefundBatch.objects.exists()
        or RefundBatchItem.objects.exists()
        or AfterSale.objects.exists()
        or Refund.objects.exists()
    )


def test_finance_batch_refunds_orders_from_the_order_list(role_client, buyer, paid_orders):
    first, second, third = paid_orders(3)
    finance = role_client("财务")
    changelist = finance.get(reverse("admin:orders_order_changelist")).content.decode()
    assert 'value="batch_refund"' in changelist and "批量退款" in changelist
    request_refund(buyer[1], third.order_no)  # the customer asked already: skipped with the reason

    confirm = action(finance, "orders.order", "batch_refund", [first.pk, second.pk, third.pk])
    page = confirm.content.decode()
    assert confirm.status_code == 200 and "确认批量退款" in page
    assert page.count("<td>70.00</td>") == 6  # paid and refundable, yuan, for each of the 3 orders
    assert f"将跳过：已有处理中的退款申请 {third.order_no}R1（待审核）" in page
    assert "共 3 个订单，可退款 2 个，合计 140.00 元。" in page

    done = action(finance, "orders.order", "batch_refund", [first.pk, second.pk, third.pk], apply="1", text="商品停产")
    batch = RefundBatch.objects.get()
    assert done.redirect_chain[-1][0] == reverse("admin:payments_refundbatch_change", args=[batch.pk])
    assert ("success", f"批次 #{batch.pk}：2 个订单已排队退款，1 个跳过（原因见下表）。刷新本页查看进度。") in texts(
        done
    )
    assert (batch.created_by, batch.reason) == (finance.user, "商品停产")
    assert list(batch.items.order_by("pk").values_list("order_no", "status", "amount_fen")) == [
        (first.order_no, "queued", 7000),
        (second.order_no, "queued", 7000),
        (third.order_no, "skipped", 0),
    ]

    for item in batch.items.filter(status="queued"):
        refund_batches.refund_batch_item_run(item_id=item.pk)
    refunds.refund_execute(refund_id=batch.items.get(order=first).refund_id)  # paid from the balance: at once
    page = finance.get(reverse("admin:payments_refundbatch_change", args=[batch.pk])).content.decode()
    for text in (
        first.order_no,
        f"{first.order_no}R1",
        f"{second.order_no}R1",
        "70.00",
        "已退款",
        "退款中",
        "待退款",
        "已跳过",
        "排队中 0，退款中 1，已退款 1，失败 0，已跳过 1",
        "商品停产",
    ):
        assert text in page, text
    assert 'name="_save"' not in page  # read-only
    found = finance.get(reverse("admin:payments_refundbatch_changelist"), {"q": second.order_no})
    row = found.context["cl"].result_list.get()  # searched by an item's order number: counts not multiplied
    assert (row.pk, row.n_items, row.n_queued, row.n_refunding, row.n_refunded, row.n_failed, row.n_skipped) == (
        batch.pk,
        3,
        0,
        1,
        1,
        0,
        1,
    )
    listing = found.content.decode()
    assert f"批次 #{batch.pk}" in listing and "商品停产" in listing
    assert [Order.objects.get(pk=o.pk).status for o in (first, second, third)] == ["refunded", "refunding", "paid"]


def test_the_add_page_takes_pasted_order_numbers(role_client, paid_orders):
    first, second = paid_orders(2)
    finance = role_client("财务")
    add = reverse("admin:payments_refundbatch_add")
    assert finance.get(add).status_code == 200
    bad = finance.post(add, {"order_nos": " , ", "reason": "缺货"})
    assert bad.status_code == 200 and "请填写 1 到 500 个订单号（现有 0 个）" in bad.content.decode()
    assert not RefundBatch.objects.exists()
    response = finance.post(
        add, {"order_nos": f"{first.order_no}\n{second.order_no}，NOPE1", "reason": "缺货"}, follow=True
    )
    batch = RefundBatch.objects.get()
    assert response.redirect_chain[-1][0] == reverse("admin:payments_refundbatch_change", args=[batch.pk])
    assert list(batch.items.order_by("pk").values_list("order_no", "status", "note")) == [
        (first.order_no, "queued", ""),
        (second.order_no, "queued", ""),
        ("NOPE1", "skipped", "没有这个订单号"),
    ]
    assert "没有这个订单号" in response.content.decode()


def test_retry_failed_items_is_guarded_by_the_permission(role_client, make_staff, paid_orders, monkeypatch):
    (order,) = paid_orders(1)
    finance = role_client("财务")
    batch = refund_batches.refund_batch_create(order_nos=[order.order_no], reason="缺货", user=finance.user)
    item = batch.items.get()
    RefundBatchItem.objects.filter(pk=item.pk).update(status="failed", note="尝试 3 次仍失败：X")
    viewer = make_staff(view_all=True)
    action(viewer, "payments.refundbatch", "retry_failed", [batch.pk])
    assert RefundBatchItem.objects.get(pk=item.pk).status == "failed"
    done = action(finance, "payments.refundbatch", "retry_failed", [batch.pk])
    assert ("success", f"批次 #{batch.pk}: 已重新提交退款 0 个，重新排队 1 个") in texts(done)
    assert RefundBatchItem.objects.get(pk=item.pk).status == "queued"


def test_view_only_and_non_finance_staff_cannot_create_a_batch(role_client, viewer, paid_orders):
    first, second = paid_orders(2)
    service = role_client("客服")
    for client in (viewer, service):
        page = client.get(reverse("admin:orders_order_changelist")).content.decode()
        assert 'value="batch_refund"' not in page
        assert client.get(reverse("admin:payments_refundbatch_add")).status_code == 403
        assert (
            client.post(
                reverse("admin:payments_refundbatch_add"), {"order_nos": first.order_no, "reason": "缺货"}
            ).status_code
            == 403
        )
        action(client, "orders.order", "batch_refund", [first.pk, second.pk], apply="1", text="缺货")
    assert nothing_changed()
    assert [Order.objects.get(pk=o.pk).status for o in (first, second)] == ["paid", "paid"]
