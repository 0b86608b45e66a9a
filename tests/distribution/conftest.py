"""Fixtures for distribution: a referral chain A <- B <- C (C's referrer is B, B's is A), a
paid order of C's, running its commission follow-up."""

import pytest

from apps.accounts.models import Address
from apps.distribution import referral
from apps.orders import followups
from apps.orders.models import FollowUp


@pytest.fixture
def chain(make_customer):
    """``(a, b, c)`` customers; b bound to a, c bound to b (their Distributor rows exist)."""
    a, b, c = make_customer(), make_customer(), make_customer()
    code_a = referral.distributor_for(customer_id=a.pk).referral_code
    referral.referrer_bind(customer_id=b.pk, code=code_a)
    code_b = referral.distributor_for(customer_id=b.pk).referral_code
    referral.referrer_bind(customer_id=c.pk, code=code_b)
    return a, b, c


@pytest.fixture
def buy(make_api, make_sku, place_order, wechat, deliver):
    """``buy(customer, price_fen=10000, qty=1, award=True)`` -> order JSON, paid by WeChat
    (sandbox notification delivered); with ``award`` its commission follow-up has run."""

    def run(customer, *, price_fen: int = 10000, qty: int = 1, award: bool = True) -> dict:
        api = make_api(customer)
        address = Address.objects.filter(customer=customer).first() or Address.objects.create(
            customer=customer,
            name="买家",
            phone="13800000000",
            province="浙江省",
            city="杭州市",
            district="西湖区",
            detail="1号",
            is_default=True,
        )
        sku = make_sku(price_fen=price_fen, stock=100)
        order = place_order(api, items=[(sku, qty)], address=address)
        assert (
            api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code == 200
        )
        wechat.control.pay(order["order_no"])
        deliver()
        if award:
            row = FollowUp.objects.filter(order__order_no=order["order_no"], kind="commission_award").first()
            if row is not None:
                assert followups.followup_execute(row.pk) == "done"
        return {**order, "api": api}

    return run


@pytest.fixture(autouse=True)
def v3_sandbox(wechat, settings):
    """Pay API v3 calls go to the test sandbox; its transfer notifications reach the shop
    through Django's test client (signed headers kept), ``on_commit`` run as after a commit."""
    from django.test import Client

    from wechat_sandbox import pay_v3

    settings.WECHAT_PAY_V3_API_BASE = wechat.url.rstrip("/")
    client = Client()

    def transport(url: str, body: bytes, headers: dict) -> tuple[int, str]:
        from urllib.parse import urlparse

        response = client.post(
            urlparse(url).path,
            data=body,
            content_type="application/json",
            headers={k: v for k, v in headers.items() if k != "Content-Type"},
        )
        return response.status_code, response.content.decode()

    pay_v3.v3(wechat.state).transport = transport
    return pay_v3.v3(wechat.state)


@pytest.fixture
def finance(db):
    """A staff user holding ``distribution.decide_withdrawal`` (the 财务 role's permission)."""
    from django.contrib.auth.models import Permission, User

    user = User.objects.create_user("fin", password="x", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="decide_withdrawal"))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def earner(make_customer):
    """``earner(available_fen)`` -> a customer whose available commission is that much (booked
    through the ledger, as a release would)."""
    import itertools

    from apps.distribution import ledger
    from apps.distribution.models import LedgerEntry

    refs = itertools.count(1)

    def make(available_fen: int = 10000, customer=None):
        customer = customer or make_customer()
        me = referral.distributor_for(customer_id=customer.pk)
        ledger.ledger_book(
            distributor_id=me.pk, reason=LedgerEntry.Reason.RELEASE, ref=f"test{next(refs)}", available=available_fen
        )
        return customer

    return make
