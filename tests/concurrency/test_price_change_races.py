"""改价 under races (PostgreSQL, real threads): a price change racing the customer's balance payment
leaves the money and the order agreeing (the customer is charged exactly what the order says it
cost), and two staff changing one price at once leave one consistent amount."""

import pytest
from django.contrib.auth.models import Group, Permission

from apps.accounts.models import Address, Customer, WalletEvent
from apps.backoffice.roles import sync_roles
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order, OrderEvent, OrderStatus
from apps.payments import balance, price_change
from starmall.errors import InvalidState

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROUNDS = 6


@pytest.fixture
def finance(django_user_model):
    """A staff user of the 财务 role (holds orders.change_price)."""
    sync_roles(Group, Permission)
    user = django_user_model.objects.create_user("finance-race", password="pw-123456", is_staff=True)
    user.groups.add(Group.objects.get(name="财务"))
    return django_user_model.objects.get(pk=user.pk)  # fresh permission cache


def _unpaid(customer, sku) -> Order:
    key = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}])["order_key"]
    order, _ = order_create(customer=customer, order_key=key)
    return order


def test_a_price_change_racing_a_balance_payment_charges_what_the_order_says(make_customer, make_sku, finance, race):
    customer = make_customer(balance_fen=1_000_000)
    Address.objects.create(
        customer=customer,
        name="王五",
        phone="13700000000",
        province="上海市",
        city="上海市",
        detail="1号",
        is_default=True,
    )
    sku = make_sku(price_fen=10_000, stock=ROUNDS)
    for _ in range(ROUNDS):
        order = _unpaid(customer, sku)
        before = Customer.objects.get(pk=customer.pk).balance_fen

        def act(i, order_no=order.order_no, new_fen=order.pay_fen - 2_000):
            if i == 0:
                return balance.payment_balance_pay(order_no=order_no, customer_id=customer.pk)
            return price_change.order_price_change(
                order_no=order_no, pay_fen=new_fen, reason="老顾客优惠", user=finance, actor="staff:finance-race"
            )

        results = race(act, 2)
        assert not [r for r in results if isinstance(r, BaseException) and not isinstance(r, InvalidState)], results
        order.refresh_from_db()
        assert order.status == OrderStatus.PAID  # the payment never loses to a price change
        charged = before - Customer.objects.get(pk=customer.pk).balance_fen
        assert charged == order.pay_fen  # the money and the order agree, whichever came first
        assert (
            order.pay_fen
            == order.goods_fen + order.freight_fen - order.coupon_fen - order.points_fen + order.adjust_fen
        )
        changed = OrderEvent.objects.filter(order=order, note__startswith="改价").count()
        assert changed == (1 if order.adjust_fen else 0)
    debits = sum(
        WalletEvent.objects.filter(customer=customer, kind=WalletEvent.Kind.BALANCE, amount__lt=0).values_list(
            "amount", flat=True
        )
    )
    paid = sum(Order.objects.filter(customer=customer, status=OrderStatus.PAID).values_list("pay_fen", flat=True))
    assert -debits == paid  # the ledger sums to what the orders cost


def test_two_staff_changing_one_price_at_once_leave_one_consistent_amount(make_customer, make_sku, finance, race):
    customer = make_customer()
    Address.objects.create(
        customer=customer,
        name="王五",
        phone="13700000000",
        province="上海市",
        city="上海市",
        detail="1号",
        is_default=True,
    )
    order = _unpaid(customer, make_sku(price_fen=10_000, stock=1))
    targets = [8_000, 9_000, 7_000, 9_500]
    results = race(
        lambda i: price_change.order_price_change(
            order_no=order.order_no, pay_fen=targets[i], reason="让利", user=finance, actor=f"staff:{i}"
        ),
        len(targets),
    )
    assert not [r for r in results if isinstance(r, BaseException) and not isinstance(r, InvalidState)], results
    order.refresh_from_db()
    assert order.status == OrderStatus.UNPAID and order.pay_fen in targets
    assert order.pay_fen == order.goods_fen + order.freight_fen - order.coupon_fen - order.points_fen + order.adjust_fen
    events = list(
        OrderEvent.objects.filter(order=order, note__startswith="改价").order_by("id").values_list("note", flat=True)
    )
    applied = sum(isinstance(r, Order) for r in results)
    assert len(events) == applied >= 1
    assert (
        events[-1].split("→ ")[1].startswith(f"{order.pay_fen / 100:.2f}")
    )  # the last change logged is the amount kept
