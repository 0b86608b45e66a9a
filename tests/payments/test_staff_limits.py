"""Staff money limits in the services themselves (apps/payments/staff_limits.py): 客服 approve
refunds up to SERVICE_REFUND_LIMIT_FEN, 运营 改价 within OPS_PRICE_CHANGE_PERCENT of the goods,
财务 any; a refusal names the role that may. The back office reaches the same checks
(tests/backoffice/test_money_roles.py); here the services are called directly."""

import pytest

from apps.orders.models import AfterSale, Order, OrderEvent
from apps.payments import price_change, refunds, returns
from apps.payments.models import Refund
from apps.payments.staff_limits import StaffForbidden

pytestmark = pytest.mark.django_db


@pytest.fixture
def role_user(role_client):
    """``role_user("客服")`` -> a staff user in that role (the group of apps/backoffice/roles.py)."""
    return lambda role: role_client(role).user


def test_service_approves_up_to_the_limit_and_finance_above(
    requested_refund, role_user, django_capture_on_commit_callbacks
):
    service, finance = role_user("客服"), role_user("财务")
    at_limit, over = requested_refund(20000), requested_refund(20001)

    with django_capture_on_commit_callbacks(execute=False):
        refund = refunds.after_sale_approve(after_sale_id=at_limit.pk, actor="staff:service", user=service)
    assert (refund.refund_fen, AfterSale.objects.get(pk=at_limit.pk).status) == (20000, "approved")

    with pytest.raises(StaffForbidden) as refused:
        refunds.after_sale_approve(after_sale_id=over.pk, actor="staff:service", user=service)
    assert (refused.value.message, refused.value.status, refused.value.code) == (
        "超过 ¥200.00 的退款需财务审核。",
        403,
        "forbidden",
    )
    assert AfterSale.objects.get(pk=over.pk).status == "requested" and not Refund.objects.filter(after_sale=over)

    with django_capture_on_commit_callbacks(execute=False):
        refund = refunds.after_sale_approve(after_sale_id=over.pk, actor="staff:finance", user=finance)
    assert refund.refund_fen == 20001 and Refund.objects.filter(after_sale=over).count() == 1


def test_roles_without_refund_permission_are_refused_with_who_may(requested_refund, role_user):
    sale = requested_refund(100)
    for role in ("运营", "老师"):
        with pytest.raises(StaffForbidden) as refused:
            refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:x", user=role_user(role))
        assert refused.value.message == "没有同意退款的权限，需财务审核。"
    assert AfterSale.objects.get(pk=sale.pk).status == "requested" and Refund.objects.count() == 0


def test_the_refund_limit_is_the_setting(requested_refund, role_user, settings):
    settings.SERVICE_REFUND_LIMIT_FEN = 5000
    sale = requested_refund(5001)
    with pytest.raises(StaffForbidden, match=r"^超过 ¥50\.00 的退款需财务审核。$"):
        refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:service", user=role_user("客服"))


def test_system_approvals_have_no_staff_limit(requested_refund, django_capture_on_commit_callbacks):
    sale = requested_refund(25000)  # a batch (already checked by payments.batch_refund) or the shop's own rule
    with django_capture_on_commit_callbacks(execute=False):
        assert refunds.after_sale_approve(after_sale_id=sale.pk, actor="system:auto").refund_fen == 25000


def test_approving_a_return_has_the_same_limit(requested_refund, role_user):
    sale = requested_refund(20001)
    Order.objects.filter(pk=sale.order_id).update(status="shipped")  # shipped goods: return first
    with pytest.raises(StaffForbidden, match="需财务审核"):
        returns.after_sale_approve_return(after_sale_id=sale.pk, actor="staff:service", user=role_user("客服"))
    assert AfterSale.objects.get(pk=sale.pk).status == "requested"
    assert returns.after_sale_approve_return(after_sale_id=sale.pk, actor="staff:finance", user=role_user("财务"))
    assert AfterSale.objects.get(pk=sale.pk).status == "approved_return"


@pytest.fixture
def unpaid(buyer, make_sku, place_order, wechat):
    """An unpaid order of goods 100.00 yuan, no freight: pay_fen 10000; 10 % of the goods is 1000."""
    order = place_order(buyer.api, items=[(make_sku(price_fen=10000), 1)])
    row = Order.objects.get(order_no=order["order_no"])
    assert (row.goods_fen, row.pay_fen, row.adjust_fen) == (10000, 10000, 0)
    return row


def _change(order: Order, pay_fen: int, user) -> Order:
    return price_change.order_price_change(
        order_no=order.order_no, pay_fen=pay_fen, reason="议价", user=user, actor=f"staff:{user.username}"
    )


def test_operations_change_price_within_the_percentage_either_way(unpaid, role_user):
    ops = role_user("运营")
    assert (_change(unpaid, 9000, ops).pay_fen, Order.objects.get(pk=unpaid.pk).adjust_fen) == (9000, -1000)
    with pytest.raises(StaffForbidden) as refused:  # one fen further: the total adjustment counts
        _change(unpaid, 8999, ops)
    assert refused.value.message == "改价超过商品金额的 ±10 %（¥10.00），需财务操作。"
    assert _change(unpaid, 11000, ops).adjust_fen == 1000  # exactly +10 %
    with pytest.raises(StaffForbidden, match="需财务操作"):
        _change(unpaid, 11001, ops)
    row = Order.objects.get(pk=unpaid.pk)
    assert (row.pay_fen, row.adjust_fen) == (11000, 1000)
    assert OrderEvent.objects.filter(order=unpaid, note__startswith="改价").count() == 2


def test_finance_changes_price_by_any_amount_and_others_are_refused(unpaid, role_user, settings):
    for role in ("客服", "老师"):
        with pytest.raises(StaffForbidden) as refused:
            _change(unpaid, 9990, role_user(role))
        assert refused.value.message == "没有改价的权限，需财务操作。"
    assert Order.objects.get(pk=unpaid.pk).pay_fen == 10000
    assert _change(unpaid, 5000, role_user("财务")).adjust_fen == -5000
    settings.OPS_PRICE_CHANGE_PERCENT = 60
    assert _change(unpaid, 4000, role_user("运营")).adjust_fen == -6000  # the percentage is the setting
