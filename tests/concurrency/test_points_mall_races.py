"""Points-mall and gift races on PostgreSQL with real threads: racing exchanges never overdraw
points, an item's stock, a SKU's stock or the per-customer limit; racing first logins give one
new-customer coupon; two runs of an issue to a tag give each customer one coupon."""

import pytest
from django.db.models import Sum

from apps.accounts import services as accounts
from apps.accounts import wallet
from apps.accounts.exceptions import InsufficientBalance
from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Sku
from apps.crm import tag_coupons
from apps.crm.models import TagCouponGrant
from apps.marketing.models import CouponGift, CouponTemplate
from apps.members import tags
from apps.members.models_tags import Tag
from apps.orders.models import Order
from apps.points_mall import services
from apps.points_mall.models import Exchange, Item
from starmall.errors import LimitExceeded

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 8


def _template(**terms) -> CouponTemplate:
    return CouponTemplate.objects.create(
        **{"name": "10 元券", "kind": "amount", "amount_fen": 1000, "valid_days": 30, "total": 100, **terms}
    )


@pytest.fixture
def holder(make_customer, address_of):
    """``holder(points)`` -> a customer with that many spendable points (a ledger row) and an address."""

    def make(points: int) -> Customer:
        customer = make_customer()
        wallet.points_adjust(customer_id=customer.pk, points=points, ref=f"race:{customer.pk}")
        address_of(customer)
        return customer

    return make


def _ledger_matches(customer_id: int) -> bool:
    total = WalletEvent.objects.filter(customer_id=customer_id, kind="points", state="available").aggregate(
        s=Sum("amount")
    )["s"]
    return Customer.objects.get(pk=customer_id).points == (total or 0)


def test_many_customers_race_for_the_last_goods(holder, make_sku, race):
    sku = make_sku(price_fen=9900, stock=10)
    item = Item.objects.create(name="茶杯", kind="goods", sku=sku, points=100, stock=3, limit_per_customer=1)
    customers = [holder(100) for _ in range(N)]

    results = race(lambda i: services.item_exchange(item_id=item.pk, customer_id=customers[i].pk), N)

    assert sum(isinstance(r, Exchange) for r in results) == 3, results
    assert sum(isinstance(r, InsufficientStock) for r in results) == N - 3, results
    assert Item.objects.get(pk=item.pk).stock == 0
    assert Sku.objects.get(pk=sku.pk).stock == 7
    assert Order.objects.filter(status="paid", pay_fen=0).count() == 3 == Order.objects.count()
    winners = {r.customer_id for r in results if isinstance(r, Exchange)}
    assert {c.pk: Customer.objects.get(pk=c.pk).points for c in customers} == {
        c.pk: 0 if c.pk in winners else 100 for c in customers
    }
    assert all(_ledger_matches(c.pk) for c in customers)


def test_one_customer_racing_never_spends_more_points_than_they_have(holder, race):
    item = Item.objects.create(
        name="10 元券", kind="coupon", coupon_template=_template(), points=100, stock=50, limit_per_customer=0
    )
    customer = holder(250)

    results = race(lambda i: services.item_exchange(item_id=item.pk, customer_id=customer.pk), N)

    assert sum(isinstance(r, Exchange) for r in results) == 2, results
    assert sum(isinstance(r, InsufficientBalance) for r in results) == N - 2, results
    assert Customer.objects.get(pk=customer.pk).points == 50 and _ledger_matches(customer.pk)
    assert Item.objects.get(pk=item.pk).stock == 48
    assert Coupon.objects.filter(customer=customer).count() == 2


def test_one_customer_racing_never_passes_the_limit(holder, race):
    item = Item.objects.create(
        name="10 元券", kind="coupon", coupon_template=_template(), points=10, stock=50, limit_per_customer=2
    )
    customer = holder(1000)

    results = race(lambda i: services.item_exchange(item_id=item.pk, customer_id=customer.pk), N)

    assert sum(isinstance(r, Exchange) for r in results) == 2, results
    assert sum(isinstance(r, LimitExceeded) for r in results) == N - 2, results
    assert Customer.objects.get(pk=customer.pk).points == 980 and _ledger_matches(customer.pk)
    assert Item.objects.get(pk=item.pk).stock == 48


def test_racing_first_logins_give_one_new_customer_coupon(wechat, race):
    template = _template(occasion="new_customer")
    codes = [wechat.state.issue_login_code("oRacingGiftee0000000000001").code for _ in range(N)]

    results = race(lambda i: accounts.customer_login(code=codes[i]), N)

    assert all(isinstance(r, accounts.LoginResult) for r in results), results
    customer_id = results[0].customer.pk
    assert Coupon.objects.filter(customer_id=customer_id, template=template).count() == 1
    assert CouponGift.objects.filter(customer_id=customer_id).count() == 1
    assert CouponTemplate.objects.get(pk=template.pk).issued == 1


def test_two_runs_of_an_issue_to_a_tag_give_each_customer_one_coupon(make_customer, race):
    template = _template(total=1000)
    tag = Tag.objects.create(name="老客")
    customers = [make_customer() for _ in range(30)]
    tags.customers_tag(tag_id=tag.pk, customer_ids=[c.pk for c in customers])
    issue = tag_coupons.tag_coupon_issue_start(tag_id=tag.pk, template_id=template.pk)
    assert TagCouponGrant.objects.count() == 0  # pushed to the queue, not run (no worker here)

    results = race(lambda i: tag_coupons.tag_coupon_issue_run(issue_id=issue.pk), 2)

    assert results == ["done", "done"]
    assert Coupon.objects.filter(template=template).count() == 30 == TagCouponGrant.objects.count()
    assert CouponTemplate.objects.get(pk=template.pk).issued == 30
    issue.refresh_from_db()
    assert (issue.status, issue.granted) == ("done", 30)
