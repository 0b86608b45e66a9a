"""The refund list shows why money went back in the customer's (or the batch's) words, beside
the kind of refund (售后退款)."""

import pytest

from apps.orders.models import AfterSale
from apps.payments import refunds
from apps.payments.models import Refund

pytestmark = pytest.mark.django_db


def test_refund_list_shows_the_customers_reason(boss, shop_with_a_paid_order):
    after_sale = AfterSale.objects.get(order__order_no=shop_with_a_paid_order["order_no"])
    refunds.after_sale_approve(after_sale_id=after_sale.pk, actor="staff:boss")
    refund = Refund.objects.get(after_sale=after_sale)
    page = boss.get("/admin/payments/refund/").content.decode()
    assert refund.out_refund_no in page
    assert "<th" in page and "退款理由" in page
    assert "不想要了" in page and "售后退款" in page
