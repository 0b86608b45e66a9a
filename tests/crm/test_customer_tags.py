"""Customer tags: by hand (idempotent), by rules over orders (spent over X fen in N days,
bought a product; run twice = once; rule rows follow the matches, hand rows stay), and a
coupon template issued to a tag (once per customer per issue, retries included; runs out)."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.models import Coupon
from apps.crm import tag_coupons, tag_rules
from apps.crm.models import TagCouponGrant, TagCouponIssue
from apps.marketing.models import CouponTemplate
from apps.members import tags
from apps.members.models_tags import CustomerTag, Tag
from apps.orders.models import Order
from starmall.errors import InvalidInput, NotFound

pytestmark = pytest.mark.django_db


def _tagged(tag: Tag) -> dict[int, str]:
    return dict(CustomerTag.objects.filter(tag=tag).values_list("customer_id", "source"))


def test_tagging_by_hand_twice_leaves_one_row(make_customer):
    tag = Tag.objects.create(name="VIP")
    a, b = make_customer(), make_customer()

    assert tags.customers_tag(tag_id=tag.pk, customer_ids=[a.pk, b.pk]) == 2
    assert tags.customers_tag(tag_id=tag.pk, customer_ids=[a.pk, b.pk, a.pk]) == 0
    assert _tagged(tag) == {a.pk: "manual", b.pk: "manual"}
    assert tags.customers_untag(tag_id=tag.pk, customer_ids=[a.pk]) == 1
    assert _tagged(tag) == {b.pk: "manual"}
    with pytest.raises(NotFound):
        tags.customers_tag(tag_id=999999, customer_ids=[a.pk])


def test_rule_terms_are_checked():
    with pytest.raises(InvalidInput) as spent:
        tags.tag_validate(rule="spent_over", rule_spent_fen=0, rule_days=None, rule_product_id=None)
    assert set(spent.value.detail) == {"rule_spent_fen", "rule_days"}
    with pytest.raises(InvalidInput) as bought:
        tags.tag_validate(rule="bought_product", rule_spent_fen=None, rule_days=None, rule_product_id=None)
    assert set(bought.value.detail) == {"rule_product"}
    tags.tag_validate(rule="manual", rule_spent_fen=None, rule_days=None, rule_product_id=None)


def test_spent_over_counts_paid_orders_of_the_last_days(make_customer, make_sku, paid_order):
    sku = make_sku(price_fen=6000, stock=20)
    big, small, old, hand = (make_customer(balance_fen=1_000_000) for _ in range(4))
    paid_order(big, sku, 2)  # 120.00 yuan
    paid_order(small, sku, 1)  # 60.00
    old_order = paid_order(old, sku, 2)
    Order.objects.filter(pk=old_order.pk).update(paid_at=timezone.now() - dt.timedelta(days=40))
    tag = Tag.objects.create(name="高消费", rule="spent_over", rule_spent_fen=10000, rule_days=30)
    tags.customers_tag(tag_id=tag.pk, customer_ids=[hand.pk])

    assert tag_rules.tag_rule_apply(tag_id=tag.pk) == (1, 0)
    assert tag_rules.tag_rule_apply(tag_id=tag.pk) == (0, 0)  # twice = once
    assert _tagged(tag) == {big.pk: "rule", hand.pk: "manual"}

    # the big spender's order is refunded: the rule row goes, the hand-made one stays
    Order.objects.filter(customer=big).update(status="refunded")
    assert tag_rules.tag_rule_apply(tag_id=tag.pk) == (0, 1)
    assert _tagged(tag) == {hand.pk: "manual"}
    assert Tag.objects.get(pk=tag.pk).evaluated_at is not None


def test_bought_product_and_the_beat_job(make_customer, make_sku, paid_order):
    cup, pot = make_sku(name="茶杯", stock=20), make_sku(name="茶壶", stock=20)
    buyer, other = make_customer(balance_fen=1_000_000), make_customer(balance_fen=1_000_000)
    paid_order(buyer, cup)
    paid_order(other, pot)
    cup_tag = Tag.objects.create(name="买过茶杯", rule="bought_product", rule_product=cup.product)
    Tag.objects.create(name="停用", rule="bought_product", rule_product=pot.product, is_active=False)
    Tag.objects.create(name="手动")

    assert tag_rules.tag_rules_evaluate() == 1
    assert _tagged(cup_tag) == {buyer.pk: "rule"}
    assert CustomerTag.objects.count() == 1


def _template(**terms) -> CouponTemplate:
    return CouponTemplate.objects.create(
        **{"name": "老客券", "kind": "amount", "amount_fen": 800, "valid_days": 10, "total": 100, **terms}
    )


def test_a_coupon_issued_to_a_tag_reaches_each_tagged_customer_once(make_customer, django_capture_on_commit_callbacks):
    tag = Tag.objects.create(name="老客")
    tagged = [make_customer() for _ in range(3)]
    untagged = make_customer()
    tags.customers_tag(tag_id=tag.pk, customer_ids=[c.pk for c in tagged])
    template = _template()

    with django_capture_on_commit_callbacks(execute=False) as pushed:
        issue = tag_coupons.tag_coupon_issue_start(tag_id=tag.pk, template_id=template.pk, created_by="boss")
    assert len(pushed) == 1  # the task is pushed after commit
    assert tag_coupons.tag_coupon_issue_run(issue_id=issue.pk) == "done"
    TagCouponIssue.objects.filter(pk=issue.pk).update(status="running", cursor=0)  # a retry from the start
    assert tag_coupons.tag_coupon_issue_run(issue_id=issue.pk) == "done"

    holders = sorted(Coupon.objects.filter(template=template).values_list("customer_id", flat=True))
    assert holders == sorted(c.pk for c in tagged)
    assert not Coupon.objects.filter(customer=untagged).exists()
    issue.refresh_from_db()
    assert (issue.status, issue.granted, issue.skipped) == ("done", 3, 0)
    assert CouponTemplate.objects.get(pk=template.pk).issued == 3 == TagCouponGrant.objects.count()
    # a second issue of the same template to the same tag is a new issue: each gets one more
    second = tag_coupons.tag_coupon_issue_start(tag_id=tag.pk, template_id=template.pk)
    tag_coupons.tag_coupon_issue_run(issue_id=second.pk)
    assert Coupon.objects.filter(template=template).count() == 6


def test_an_issue_to_a_tag_stops_when_the_template_runs_out(make_customer):
    tag = Tag.objects.create(name="老客")
    tags.customers_tag(tag_id=tag.pk, customer_ids=[make_customer().pk for _ in range(5)])
    template = _template(total=2)

    issue = tag_coupons.tag_coupon_issue_start(tag_id=tag.pk, template_id=template.pk)
    tag_coupons.tag_coupon_issue_run(issue_id=issue.pk)

    issue.refresh_from_db()
    assert (issue.status, issue.granted, issue.skipped) == ("done", 2, 3)
    assert Coupon.objects.filter(template=template).count() == 2
    assert tag_coupons.tag_coupon_issues_redispatch() == 0


def test_an_issue_needs_a_tag_and_an_active_template(make_customer):
    tag = Tag.objects.create(name="老客")
    with pytest.raises(NotFound):
        tag_coupons.tag_coupon_issue_start(tag_id=tag.pk, template_id=_template(is_active=False).pk)
    with pytest.raises(NotFound):
        tag_coupons.tag_coupon_issue_start(tag_id=999999, template_id=_template().pk)
    assert TagCouponIssue.objects.count() == 0


def test_tag_issues_and_marketings_issues_share_one_walk(make_customer, monkeypatch):
    """One implementation: both kinds of issue go through ``coupons.coupon_issue_walk`` (their
    own once-keys), and beat's re-push of both is ``coupons.coupon_issues_redispatch``."""
    from apps.marketing import coupons
    from apps.marketing.models import CouponIssue

    walked = []
    walk = coupons.coupon_issue_walk
    monkeypatch.setattr(
        coupons, "coupon_issue_walk", lambda issue, **kw: walked.append(type(issue)) or walk(issue, **kw)
    )
    tag = Tag.objects.create(name="共用")
    customers = [make_customer() for _ in range(3)]
    tags.customers_tag(tag_id=tag.pk, customer_ids=[c.pk for c in customers[:2]])
    template = _template(total=10)
    by_tag = tag_coupons.tag_coupon_issue_start(tag_id=tag.pk, template_id=template.pk)
    by_filter = coupons.coupon_issue_start(template_id=template.pk, min_points=0)
    pushed = []
    monkeypatch.setattr(tag_coupons, "_push", lambda pk, sweep=False: pushed.append(("tag", pk)))
    monkeypatch.setattr(coupons, "_push_issue", lambda pk, sweep=False: pushed.append(("marketing", pk)))
    assert tag_coupons.tag_coupon_issues_redispatch() == 1 and coupons.coupon_issues_redispatch() == 1
    assert pushed == [("tag", by_tag.pk), ("marketing", by_filter.pk)]
    for _ in range(2):  # a retry changes nothing
        tag_coupons.tag_coupon_issue_run(issue_id=by_tag.pk)
        coupons.coupon_issue_run(issue_id=by_filter.pk)
    assert walked == [TagCouponIssue, CouponIssue] * 2
    counts = sorted(Coupon.objects.filter(template=template).values_list("customer_id", flat=True))
    assert counts == sorted([c.pk for c in customers[:2]] * 2 + [customers[2].pk])
    assert CouponTemplate.objects.get(pk=template.pk).issued == 5
    assert tag_coupons.tag_coupon_issues_redispatch() == 0 == coupons.coupon_issues_redispatch()
