"""Back office of coupons and recharges: coupon templates in yuan, issuing behind marketing.issue_coupon,
recharge packages in yuan, sign-in rules; every page opens."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from apps.accounts.models import Coupon
from apps.marketing.models import CouponIssue, CouponTemplate, SignIn, SignInRule
from apps.payments.models import Recharge, RechargePackage
from starmall.admin_money import YuanField, yuan

pytestmark = pytest.mark.django_db


def _template_form(**changes):
    return {
        "name": "满100减20",
        "kind": "amount",
        "amount_fen": "20.00",
        "percent": "0",
        "max_discount_fen": "",
        "threshold_fen": "100",
        "scope": "all",
        "valid_days": "30",
        "total": "500",
        "per_customer": "1",
        "is_active": "on",
        **changes,
    }


def test_yuan_helpers_are_exact():
    assert (yuan(12800), yuan(1), yuan(0), yuan(-250), yuan(None)) == ("128.00", "0.01", "0.00", "-2.50", "-")
    field = YuanField(required=False)
    assert field.clean("19.99") == 1999 and field.clean("0.29") == 29 and field.clean("") is None
    assert field.prepare_value(1999) == "19.99"
    assert not field.has_changed(2000, "20.00") and field.has_changed(2000, "20.01")


def test_template_entered_in_yuan_is_stored_in_fen(boss):
    response = boss.post(reverse("admin:marketing_coupontemplate_add"), _template_form())
    assert response.status_code == 302, response.context["adminform"].form.errors
    template = CouponTemplate.objects.get()
    assert (template.amount_fen, template.threshold_fen, template.total, template.issued) == (2000, 10000, 500, 0)
    page = boss.get(reverse("admin:marketing_coupontemplate_change", args=[template.pk])).content.decode()
    assert 'value="20.00"' in page and 'value="100.00"' in page
    # a change writes only what changed; ``issued`` moved meanwhile is kept
    CouponTemplate.objects.filter(pk=template.pk).update(issued=7)
    response = boss.post(
        reverse("admin:marketing_coupontemplate_change", args=[template.pk]),
        _template_form(name="满100减25", amount_fen="25"),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    template.refresh_from_db()
    assert (template.name, template.amount_fen, template.issued) == ("满100减25", 2500, 7)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"kind": "percent", "percent": "150"}, "percent"),
        ({"amount_fen": "0"}, "amount_fen"),
        ({"valid_days": ""}, "valid_to"),
        ({"scope": "category"}, "categories"),
        ({"amount_fen": "1.234"}, "amount_fen"),
    ],
)
def test_template_rules_are_form_errors(boss, changes, field):
    response = boss.post(reverse("admin:marketing_coupontemplate_add"), _template_form(**changes))
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert CouponTemplate.objects.count() == 0


def test_issue_to_one_customer_from_the_admin(boss, customer):
    template = CouponTemplate.objects.create(name="新人券", amount_fen=1000, total=10, valid_days=7)
    response = boss.post(reverse("admin:marketing_couponissue_add"), {"template": template.pk, "customer": customer.pk})
    assert response.status_code == 302
    issue = CouponIssue.objects.get()
    assert (issue.status, issue.granted, issue.created_by) == ("done", 1, "boss")
    assert Coupon.objects.get(customer=customer).title == "新人券"
    template.refresh_from_db()
    assert template.issued == 1


def test_issuing_needs_the_named_permission(client, django_user_model, customer):
    template = CouponTemplate.objects.create(name="新人券", amount_fen=1000, total=10, valid_days=7)
    user = django_user_model.objects.create_user("clerk", password="pw-123456", is_staff=True)
    user.user_permissions.add(
        Permission.objects.get(codename="view_couponissue"), Permission.objects.get(codename="change_coupontemplate")
    )
    client.login(username="clerk", password="pw-123456")
    add = reverse("admin:marketing_couponissue_add")
    assert client.get(add).status_code == 403
    assert client.post(add, {"template": template.pk, "customer": customer.pk}).status_code == 403
    assert Coupon.objects.count() == 0
    user.user_permissions.add(Permission.objects.get(codename="issue_coupon"))
    assert client.post(add, {"template": template.pk, "customer": customer.pk}).status_code == 302
    assert Coupon.objects.count() == 1


def test_recharge_package_in_yuan(boss):
    response = boss.post(
        reverse("admin:payments_rechargepackage_add"),
        {"pay_fen": "100", "bonus_fen": "10.00", "is_active": "on", "sort": "1"},
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert list(RechargePackage.objects.values_list("pay_fen", "bonus_fen")) == [(10000, 1000)]
    bad = boss.post(reverse("admin:payments_rechargepackage_add"), {"pay_fen": "0", "bonus_fen": "0", "sort": "1"})
    assert "pay_fen" in bad.context["adminform"].form.errors


def test_sign_in_rules_and_new_pages_open(boss, customer):
    response = boss.post(reverse("admin:marketing_signinrule_add"), {"day": "1", "points": "5"})
    assert response.status_code == 302
    assert list(SignInRule.objects.values_list("day", "points")) == [(1, 5)]
    SignIn.objects.create(customer=customer, date="2026-12-01", streak=1, points=5)
    package = RechargePackage.objects.create(pay_fen=10000, bonus_fen=1000)
    Recharge.objects.create(
        recharge_no="R2026120100000012345678",
        customer=customer,
        package=package,
        pay_fen=10000,
        bonus_fen=1000,
        expires_at="2026-12-01T10:00:00+08:00",
    )
    template = CouponTemplate.objects.create(name="券", amount_fen=1000, total=10, valid_days=7)
    CouponIssue.objects.create(template=template)
    for model in (CouponTemplate, CouponIssue, SignInRule, SignIn, RechargePackage, Recharge):
        meta = model._meta
        assert boss.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")).status_code == 200
        first = model.objects.first()
        assert (
            boss.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk])).status_code == 200
        ), meta.label
