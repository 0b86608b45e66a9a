"""Races on PostgreSQL with real threads: one commission per level, never an overdrawn
available total, one referrer per customer, no loop, one transfer per withdrawal."""

from collections import Counter

import pytest
from django.db import transaction

from apps.accounts import services as accounts
from apps.accounts.exceptions import InsufficientBalance
from apps.distribution import commissions, ledger, referral, transfers, withdrawals
from apps.distribution.models import Commission, Distributor, LedgerEntry, TransferBill
from apps.orders import followups
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import FollowUp, Order
from apps.payments import notifications
from apps.payments import services as payments
from starmall.errors import InvalidInput, InvalidState

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 8


def _sums_match(distributor_id: int) -> bool:
    c = commissions.totals_check(distributor_id=distributor_id)
    return (c["ledger_available"], c["ledger_frozen"], c["ledger_withdrawn"]) == (
        c["available_fen"],
        c["frozen_fen"],
        c["withdrawn_fen"],
    )


def test_racing_notifications_and_followups_write_one_commission_per_level(chain, make_sku, wechat, race, is_postgres):
    assert is_postgres
    from apps.accounts.models import Address

    a, b, c = chain
    address = Address.objects.create(
        customer=c, name="买家", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )
    sku = make_sku(price_fen=20000, stock=5)
    key = order_confirm(customer=c, address_id=address.pk, items=[{"sku_id": sku.pk, "quantity": 1}])["order_key"]
    order, _ = order_create(customer=c, order_key=key)
    payments.payment_wechat_start(order_no=order.order_no, customer_id=c.pk)
    wechat.control.pay(order.order_no)
    body = wechat.control.notifications()[0]["body"].encode()

    race(lambda i: notifications.payment_notification_handle(body), N)
    row = FollowUp.objects.get(order=order, kind="commission_award")

    def award(i):
        if i % 2:
            return followups.followup_execute(row.pk)
        with transaction.atomic():  # the handler itself, as a second delivery past the lease would run it
            return commissions.commission_award(FollowUp.objects.get(pk=row.pk))

    results = race(award, N)
    assert not [r for r in results if isinstance(r, BaseException) and not isinstance(r, Exception)], results
    order = Order.objects.get(pk=order.pk)
    base = order.pay_fen - order.freight_fen
    assert sorted(Commission.objects.filter(order=order).values_list("level", "amount_fen")) == [
        (1, base // 10),
        (2, base // 20),
    ]
    da, db_ = Distributor.objects.get(customer=a), Distributor.objects.get(customer=b)
    assert (db_.frozen_fen, da.frozen_fen) == (base // 10, base // 20)
    assert LedgerEntry.objects.filter(reason="commission").count() == 2
    assert _sums_match(da.pk) and _sums_match(db_.pk)


def test_racing_withdrawals_never_take_available_below_zero(earner, race, make_customer):
    customer = earner(5000)
    me = referral.distributor_for(customer_id=customer.pk)

    results = race(lambda i: withdrawals.withdrawal_request(customer_id=customer.pk, amount_fen=3000), N)
    kinds = Counter(type(r).__name__ for r in results)
    assert kinds["Withdrawal"] == 1 and kinds["Withdrawal"] + kinds["LimitExceeded"] == N, results
    assert Distributor.objects.get(pk=me.pk).available_fen == 2000

    # the guard itself: debits racing for more than there is (distinct refs, no one-at-a-time rule)
    def debit(i):
        return ledger.ledger_book(
            distributor_id=me.pk,
            reason=LedgerEntry.Reason.WITHDRAW,
            ref=f"race{i}",
            available=-700,
            guard_available=True,
        )

    results = race(debit, N)
    assert sum(r is True for r in results) == 2 and sum(isinstance(r, InsufficientBalance) for r in results) == N - 2
    assert Distributor.objects.get(pk=me.pk).available_fen == 600
    assert _sums_match(me.pk)


def test_concurrent_first_logins_bind_one_referrer_once(wechat, make_customer, race):
    referrers = [make_customer() for _ in range(N)]
    codes = [referral.distributor_for(customer_id=r.pk).referral_code for r in referrers]
    login_codes = [wechat.state.issue_login_code("oRacingNewbie00000000000001").code for _ in range(N)]

    results = race(lambda i: accounts.customer_login(code=login_codes[i], scene=f"r={codes[i]}"), N)
    assert all(isinstance(r, accounts.LoginResult) for r in results), results
    assert len({r.customer.pk for r in results}) == 1
    me = Distributor.objects.get(customer_id=results[0].customer.pk)
    assert me.referrer_id in {referral.distributor_for(customer_id=r.pk).pk for r in referrers}
    assert Distributor.objects.filter(referrer__isnull=False, customer_id=me.customer_id).count() == 1

    late = make_customer()
    results = race(lambda i: referral.referrer_bind(customer_id=late.pk, code=codes[i]), N)
    assert sum(isinstance(r, Distributor) for r in results) == 1
    assert sum(isinstance(r, InvalidState) for r in results) == N - 1, results


def test_crossing_binds_never_close_a_loop(make_customer, race):
    for _ in range(3):
        x, y = make_customer(), make_customer()
        cx = referral.distributor_for(customer_id=x.pk).referral_code
        cy = referral.distributor_for(customer_id=y.pk).referral_code
        pairs = [(x.pk, cy), (y.pk, cx)]
        results = race(lambda i, pairs=pairs: referral.referrer_bind(customer_id=pairs[i][0], code=pairs[i][1]), 2)
        assert sum(isinstance(r, Distributor) for r in results) == 1, results
        assert sum(isinstance(r, InvalidInput) for r in results) == 1, results


def test_a_lost_transfer_answer_retried_by_racing_workers_makes_one_transfer(earner, finance, wechat, v3_sandbox, race):
    import requests

    customer = earner(4000)
    w = withdrawals.withdrawal_request(customer_id=customer.pk, amount_fen=4000)
    withdrawals.withdrawal_approve(withdrawal_no=w.withdrawal_no, user=finance)
    bill = TransferBill.objects.get(withdrawal=w)
    TransferBill.objects.filter(pk=bill.pk).update(locked_until=None, state="new")  # whatever the pushed task did
    v3_sandbox.bills.clear()
    v3_sandbox.creates.clear()
    requests.post(wechat.url + "sandbox/v3/faults", json={"transfer_create": "drop_answer"}, timeout=5)
    assert transfers.transfer_send(bill_id=bill.pk) == "sending"

    results = race(lambda i: transfers.transfer_send(bill_id=bill.pk), N)
    assert "wait_confirm" in results, results
    assert len(v3_sandbox.bills) == 1
    assert TransferBill.objects.get(pk=bill.pk).state == "wait_confirm"
