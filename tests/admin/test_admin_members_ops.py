"""The back office of customer tags, coupons to a tag and the points mall: the same services
and permissions as everywhere (a view-only user is refused, nothing changed)."""

import pytest
from admin_helpers import action, texts
from django.urls import reverse

from apps.accounts.models import Coupon
from apps.catalog.models import Kind, Product
from apps.crm import tag_coupons
from apps.crm.models import TagCouponIssue
from apps.marketing.models import CouponTemplate
from apps.members.models_tags import CustomerTag, Tag
from apps.points_mall.models import Item

pytestmark = pytest.mark.django_db


def test_staff_tag_customers_from_the_customer_list_and_filter_by_tag(make_staff, viewer, make_customer):
    tag = Tag.objects.create(name="VIP")
    a, b, c = make_customer(), make_customer(), make_customer()
    tagger = make_staff("accounts.view_customer", "members.add_customertag")

    refused = action(viewer, "accounts.customer", "customers_tag", [a.pk], tag=str(tag.pk))
    assert CustomerTag.objects.count() == 0 and refused.status_code == 200
    done = action(tagger, "accounts.customer", "customers_tag", [a.pk, b.pk], tag=str(tag.pk))
    again = action(tagger, "accounts.customer", "customers_tag", [a.pk], tag=str(tag.pk))

    assert ("success", "已给 2 位顾客打上“VIP”（0 位原已有）。") in texts(done)
    assert ("success", "已给 0 位顾客打上“VIP”（1 位原已有）。") in texts(again)
    assert set(CustomerTag.objects.values_list("customer_id", flat=True)) == {a.pk, b.pk}
    listed = tagger.get(reverse("admin:accounts_customer_changelist"), {"tag": str(tag.pk)})
    assert listed.status_code == 200
    assert {row.pk for row in listed.context["cl"].result_list} == {a.pk, b.pk}
    assert c.pk not in {row.pk for row in listed.context["cl"].result_list}
    missing = action(tagger, "accounts.customer", "customers_tag", [c.pk])
    assert ("error", "请先在操作旁选择一个标签。") in texts(missing)


def test_the_tag_editor_checks_the_rule_and_evaluates_on_demand(boss, make_customer):
    add = reverse("admin:members_tag_add")
    bad = boss.post(
        add, {"name": "高消费", "rule": "spent_over", "rule_spent_fen": "", "rule_days": "", "is_active": "on"}
    )
    assert bad.status_code == 200 and Tag.objects.count() == 0
    assert set(bad.context["adminform"].form.errors) == {"rule_spent_fen", "rule_days"}
    good = boss.post(
        add, {"name": "高消费", "rule": "spent_over", "rule_spent_fen": "100.00", "rule_days": "30", "is_active": "on"}
    )
    assert good.status_code == 302
    tag = Tag.objects.get()
    assert (tag.rule_spent_fen, tag.rule_days) == (10000, 30)  # entered in yuan, stored in fen
    evaluated = action(boss, "members.tag", "evaluate", [tag.pk])
    assert ("info", "高消费：新增 0 位，移除 0 位") in texts(evaluated)
    assert Tag.objects.get().evaluated_at is not None


def test_a_coupon_issue_to_a_tag_from_the_back_office(
    make_staff, viewer, make_customer, django_capture_on_commit_callbacks
):
    tag = Tag.objects.create(name="老客")
    CustomerTag.objects.create(tag=tag, customer=make_customer())
    template = CouponTemplate.objects.create(name="老客券", kind="amount", amount_fen=800, valid_days=10, total=100)
    add = reverse("admin:crm_tagcouponissue_add")

    assert viewer.post(add, {"tag": tag.pk, "template": template.pk}).status_code == 403
    issuer = make_staff("marketing.issue_coupon", "crm.view_tagcouponissue")
    with django_capture_on_commit_callbacks(execute=False):
        response = issuer.post(add, {"tag": tag.pk, "template": template.pk})
    assert response.status_code == 302
    issue = TagCouponIssue.objects.get()
    assert (issue.tag_id, issue.template_id, issue.created_by, issue.status) == (
        tag.pk,
        template.pk,
        issuer.user.username,
        "pending",
    )
    tag_coupons.tag_coupon_issue_run(issue_id=issue.pk)
    page = issuer.get(reverse("admin:crm_tagcouponissue_changelist"))
    assert page.status_code == 200 and Coupon.objects.count() == 1
    assert [row.granted for row in page.context["cl"].result_list] == [1]


def test_points_mall_items_from_the_back_office(boss, make_sku):
    sku = make_sku(stock=5)
    template = CouponTemplate.objects.create(name="兑换券", kind="amount", amount_fen=500, valid_days=10, total=100)
    add = reverse("admin:points_mall_item_add")
    fields = {"name": "茶杯", "points": "300", "stock": "4", "limit_per_customer": "1", "sort": "0", "is_active": "on"}

    no_sku = boss.post(add, {**fields, "kind": "goods"})
    assert no_sku.status_code == 200 and "sku" in no_sku.context["adminform"].form.errors
    assert boss.post(add, {**fields, "kind": "goods", "sku": sku.pk, "coupon_template": template.pk}).status_code == 302
    assert boss.post(add, {**fields, "name": "券", "kind": "coupon", "coupon_template": template.pk}).status_code == 302
    goods = Item.objects.get(kind="goods")
    assert (goods.sku_id, goods.coupon_template_id, goods.stock) == (sku.pk, None, 4)

    change = reverse("admin:points_mall_item_change", args=[goods.pk])
    Item.objects.filter(pk=goods.pk).update(stock=3)  # an exchange happened while the page was open
    saved = boss.post(change, {**fields, "sku": sku.pk, "stock": "4", "stock_change": "2"})
    assert saved.status_code == 302
    assert Item.objects.get(pk=goods.pk).stock == 5  # 3 + 2: never the 4 the page showed
    assert boss.get(reverse("admin:points_mall_exchange_changelist")).status_code == 200
    assert Product.objects.filter(kind=Kind.GOODS).count() == 1
