"""Batch refunds under races (PostgreSQL, real threads): batches created at the same moment for
the same orders queue each order once; racing workers make one request and one refund each."""

import pytest
from django.contrib.auth.models import Permission

from apps.accounts.models import Address, Customer
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import AfterSale, Order
from apps.payments import balance, refund_batches, refunds
from apps.payments.models import Payment, Refund, RefundBatch, RefundBatchItem

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _paid_orders(make_customer, make_sku, n: int) -> list[Order]:
    customer = make_customer(balance_fen=100_000)
    Address.objects.create(
        customer=customer,
        is_default=True,
        name="王五",
        phone="13700000000",
        province="上海市",
        city="上海市",
        detail="1号",
    )
    sku = make_sku(price_fen=5000, stock=10)
    out = []
    for _ in range(n):
        key = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}])["order_key"]
        order, _ = order_create(customer=customer, order_key=key)
        balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        out.append(Order.objects.get(pk=order.pk))
    return out


def test_racing_batches_for_the_same_orders_queue_each_once_and_refund_once(
    make_customer, make_sku, race, django_user_model
):
    paid = _paid_orders(make_customer, make_sku, 3)
    customer_id = paid[0].customer_id
    balance_after_paying = Customer.objects.get(pk=customer_id).balance_fen
    staff = []
    for i in range(4):
        user = django_user_model.objects.create_user(f"finance{i}", password="pw-123456", is_staff=True)
        user.user_permissions.add(Permission.objects.get(codename="batch_refund"))
        staff.append(django_user_model.objects.get(pk=user.pk))
    nos = [o.order_no for o in paid]
    results = race(
        lambda i: refund_batches.refund_batch_create(
            order_nos=nos[:: 1 if i % 2 else -1], reason="停产", user=staff[i]
        ),
        4,
    )
    assert all(isinstance(r, RefundBatch) for r in results), results
    live = RefundBatchItem.objects.exclude(status="skipped")
    assert sorted(live.values_list("order__order_no", flat=True)) == sorted(nos)  # one item per order
    assert RefundBatchItem.objects.filter(status="skipped").count() == 3 * 3  # the other batches: "already in #N"
    assert all(
        note.startswith("已在批次 #")
        for note in RefundBatchItem.objects.filter(status="skipped").values_list("note", flat=True)
    )

    item_ids = list(live.values_list("pk", flat=True))
    race(lambda i: refund_batches.refund_batch_item_run(item_id=item_ids[i % 3]), 6)  # each task delivered twice
    assert sorted(live.values_list("status", flat=True)) == ["refunding"] * 3
    assert AfterSale.objects.count() == Refund.objects.count() == 3
    for refund in Refund.objects.all():
        refunds.refund_execute(refund_id=refund.pk)
    assert sorted(live.values_list("status", flat=True)) == ["refunded"] * 3
    assert set(Payment.objects.values_list("total_fee", "refunded_fen")) == {(6000, 6000)}
    assert Customer.objects.get(pk=customer_id).balance_fen == balance_after_paying + 3 * 6000
    assert set(Order.objects.values_list("status", flat=True)) == {"refunded"}
