"""Commissions: frozen at payment (level 1 10 %, level 2 5 % of pay - freight, rounded down),
available at completion + COMMISSION_FREEZE_DAYS, reversed in proportion by refunds; totals
always the ledger's sums."""

import datetime as dt

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.distribution import commissions, referral
from apps.distribution.models import Commission, CommissionSettings, Distributor, LedgerEntry, ProductCommission
from apps.orders import followups, shipments
from apps.orders import services as orders
from apps.orders.models import AfterSale, FollowUp, Order
from apps.payments import refunds
from apps.payments.models import Refund

pytestmark = pytest.mark.django_db


def dist(customer) -> Distributor:
    return Distributor.objects.get(customer=customer)


def assert_ledger_sums(*customers):
    for customer in customers:
        check = commissions.totals_check(distributor_id=dist(customer).pk)
        assert (check["ledger_available"], check["ledger_frozen"], check["ledger_withdrawn"]) == (
            check["available_fen"],
            check["frozen_fen"],
            check["withdrawn_fen"],
        ), check


def refund(order_no, api, amount_fen, deliver):
    body = {"reason": "不想要了", "amount_fen": amount_fen}
    assert api.post(f"/api/v1/orders/{order_no}/refund", body, format="json").status_code == 202
    after_sale = AfterSale.objects.filter(order__order_no=order_no).order_by("-id").first()
    refunds.after_sale_approve(after_sale_id=after_sale.pk, actor="staff:t")
    refund_row = Refund.objects.filter(order__order_no=order_no).order_by("-id").first()
    refunds.refund_execute(refund_id=refund_row.pk)
    deliver()


def test_the_whole_timeline_freeze_reverse_release(chain, buy, make_api, deliver, settings):
    a, b, c = chain
    order = buy(c, price_fen=10001)
    base = order["pay_fen"] - order["freight_fen"]
    assert base == 10001
    rows = {r.level: r for r in Commission.objects.filter(order__order_no=order["order_no"])}
    assert (rows[1].distributor.customer_id, rows[1].amount_fen, rows[1].status) == (b.pk, 1000, "frozen")
    assert (rows[2].distributor.customer_id, rows[2].amount_fen, rows[2].base_fen) == (a.pk, 500, base)
    assert (dist(b).frozen_fen, dist(a).frozen_fen, dist(b).available_fen) == (1000, 500, 0)

    listed = make_api(b).get("/api/v1/me/commissions?status=frozen").json()
    assert listed["count"] == 1 and listed["results"][0]["order_no"] == order["order_no"]
    assert listed["results"][0]["available_at"] is None and listed["results"][0]["level"] == 1
    assert make_api(b).get("/api/v1/me/commissions?status=nope").status_code == 400

    # a partial refund of 30 % of what was paid reverses 30 % of each commission
    refund(order["order_no"], order["api"], order["pay_fen"] * 3 // 10, deliver)
    rows = {r.level: r for r in Commission.objects.filter(order__order_no=order["order_no"])}
    share = order["pay_fen"] * 3 // 10
    assert rows[1].reversed_fen == 1000 * share // order["pay_fen"] == 299
    assert (dist(b).frozen_fen, dist(a).frozen_fen) == (1000 - 299, 500 - 500 * share // order["pay_fen"])
    assert rows[1].status == "frozen"

    # completed: frozen for COMMISSION_FREEZE_DAYS, then available (the beat job / the command)
    row = Order.objects.get(order_no=order["order_no"])
    assert shipments.order_ship(order=row, actor="staff:t")
    assert orders.order_complete(order=Order.objects.get(pk=row.pk), actor="staff:t")
    assert commissions.commissions_release_due() == 0
    frozen = make_api(b).get("/api/v1/me/commissions").json()["results"][0]
    assert frozen["available_at"] is not None  # completion + the freeze
    later = timezone.now() + dt.timedelta(days=settings.COMMISSION_FREEZE_DAYS, minutes=1)
    assert commissions.commissions_release_due(now=later) == 2
    assert commissions.commissions_release_due(now=later) == 0
    assert (dist(b).frozen_fen, dist(b).available_fen) == (0, 701)
    assert make_api(b).get("/api/v1/me/distribution").json()["available_fen"] == 701

    # the rest refunded later: the whole commission is reversed, out of the available total
    refund(order["order_no"], order["api"], order["pay_fen"] - share, deliver)
    rows = {r.level: r for r in Commission.objects.filter(order__order_no=order["order_no"])}
    assert (rows[1].status, rows[1].reversed_fen, rows[2].status) == ("reversed", 1000, "reversed")
    assert (dist(b).available_fen, dist(b).frozen_fen, dist(a).available_fen) == (0, 0, 0)
    assert_ledger_sums(a, b, c)
    assert LedgerEntry.objects.filter(distributor=dist(b), reason="reverse").count() == 2


def test_a_commission_is_written_once_per_level_however_often_the_followup_runs(chain, buy):
    a, b, c = chain
    order = buy(c, award=False)
    row = FollowUp.objects.get(order__order_no=order["order_no"], kind="commission_award")
    assert followups.followup_execute(row.pk) == "done"
    FollowUp.objects.filter(pk=row.pk).update(status="pending")  # a redelivery after a lost "done"
    assert followups.followup_execute(row.pk) == "done"
    assert Commission.objects.filter(order__order_no=order["order_no"]).count() == 2
    assert (dist(b).frozen_fen, dist(a).frozen_fen) == (1000, 500)
    assert_ledger_sums(a, b)


def test_no_referrer_no_followup_no_commission(make_customer, buy):
    loner = make_customer()
    order = buy(loner)
    assert not FollowUp.objects.filter(order__order_no=order["order_no"], kind="commission_award").exists()
    assert Commission.objects.count() == 0


def test_product_override_and_staff_rates(chain, buy, make_sku):
    a, b, c = chain
    CommissionSettings.objects.update_or_create(pk=1, defaults={"level1_rate_bp": 2000, "level2_rate_bp": 0})
    order = buy(c, price_fen=3333)
    assert list(Commission.objects.filter(order__order_no=order["order_no"]).values_list("level", "amount_fen")) == [
        (1, 666)
    ]  # 20 % of 33.33 rounds down; level 2 earns 0: no row
    line = Order.objects.get(order_no=order["order_no"]).lines.get()
    ProductCommission.objects.create(product_id=line.product_id, level1_rate_bp=150, level2_rate_bp=100)
    second = buy(c, price_fen=3333)  # another product: shop rates
    assert Commission.objects.get(order__order_no=second["order_no"], level=1).amount_fen == 666
    base, amounts = commissions.commission_amounts(Order.objects.get(order_no=order["order_no"]))
    assert (base, amounts) == (3333, {1: 49, 2: 33})  # 1.5 % and 1 % of 33.33


def test_release_command_prints_what_it_did(chain, buy, capsys):
    a, b, c = chain
    order = buy(c)
    row = Order.objects.get(order_no=order["order_no"])
    shipments.order_ship(order=row, actor="t")
    orders.order_complete(order=Order.objects.get(pk=row.pk), actor="t")
    Order.objects.filter(pk=row.pk).update(completed_at=timezone.now() - dt.timedelta(days=8))
    call_command("commissions_release")
    assert "2" in capsys.readouterr().out
    assert dist(b).available_fen == 1000 and dist(a).available_fen == 500


def test_nobody_earns_from_an_unbound_buyer_even_after_binding_later(make_customer, buy, chain):
    a, b, c = chain
    late = make_customer()
    order = buy(late)
    referral.referrer_bind(customer_id=late.pk, code=dist(b).referral_code)
    assert not Commission.objects.filter(order__order_no=order["order_no"]).exists()
