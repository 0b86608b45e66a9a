"""The finance role works the withdrawal queue in a real headless Chromium: approves one (ONE
merchant transfer bill), rejects another with a reason (money back), checked in the database."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from apps.accounts.models import Customer
from apps.backoffice.roles import sync_roles
from apps.distribution import ledger, referral, withdrawals
from apps.distribution.models import Distributor, LedgerEntry, TransferBill, Withdrawal

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "pw-browser-1"


def _withdrawal(openid: str, amount_fen: int) -> Withdrawal:
    customer = Customer.objects.create(openid=openid, nickname=f"推广员{openid[-1]}")
    me = referral.distributor_for(customer_id=customer.pk)
    ledger.ledger_book(
        distributor_id=me.pk, reason=LedgerEntry.Reason.RELEASE, ref=f"browser-{openid}", available=amount_fen
    )
    return withdrawals.withdrawal_request(customer_id=customer.pk, amount_fen=amount_fen)


def test_finance_approves_and_rejects_withdrawals_in_the_browser(page_for, shot, base_url):
    approve = _withdrawal("oBrowserDistributor000000001", 12345)
    reject = _withdrawal("oBrowserDistributor000000002", 6789)
    sync_roles(Group, Permission)
    user = get_user_model().objects.create_user("财务", password=PASSWORD, is_staff=True)
    user.groups.add(Group.objects.get(name="财务"))

    finance = page_for("财务", PASSWORD)
    assert finance.locator("text=待审核提现").count() >= 1  # the dashboard's to-do panel
    finance.goto(f"{base_url}/admin/distribution/withdrawal/?status__exact=pending")
    assert finance.locator("text=123.45").count() >= 1  # yuan
    shot(finance, "30-withdrawal-queue")
    finance.locator(f"tr:has-text('{approve.withdrawal_no}') input.action-select").check()
    finance.select_option("select[name=action]", "approve")
    finance.click("button[name=index]")
    finance.wait_for_load_state("networkidle")
    assert finance.locator("#money-confirm >> text=微信商家转账到零钱").count() == 1  # the confirmation page
    assert Withdrawal.objects.get(pk=approve.pk).status == "pending"
    finance.click("input[type=submit][value=确认批准并转账]")
    finance.wait_for_load_state("networkidle")
    assert Withdrawal.objects.get(pk=approve.pk).status in ("approved", "wait_confirm")
    assert TransferBill.objects.filter(out_bill_no=approve.withdrawal_no).count() == 1

    finance.goto(f"{base_url}/admin/distribution/withdrawal/?status__exact=pending")
    finance.locator(f"tr:has-text('{reject.withdrawal_no}') input.action-select").check()
    finance.select_option("select[name=action]", "reject")
    finance.click("button[name=index]")
    finance.wait_for_load_state("networkidle")
    finance.fill("#id_text", "实名信息不符")
    shot(finance, "31-withdrawal-reject")
    finance.click("input[type=submit][value=驳回提现]")
    finance.wait_for_load_state("networkidle")
    rejected = Withdrawal.objects.get(pk=reject.pk)
    assert (rejected.status, rejected.reason, rejected.decided_by) == ("rejected", "实名信息不符", "财务")
    assert Distributor.objects.get(pk=rejected.distributor_id).available_fen == 6789
    shot(finance, "32-withdrawal-rejected")
