"""Coupons: templates, receiving with limits, staff issues, /me/coupons, and pricing
at confirm (scope, threshold, percent with cap, caps of the order), single use, give-back."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.models import Coupon
from apps.catalog.models import Category, Kind, Product, Sku
from apps.marketing import coupons
from apps.marketing.models import CouponIssue, CouponReceipt, CouponTemplate

pytestmark = pytest.mark.django_db

FAR = dt.timedelta(days=30)


@pytest.fixture
def make_template(db):
    """``make_template(name, **terms)`` -> CouponTemplate (amount 2000 fen, total 100, 30 days)."""

    def make(name="满100减20", *, categories=(), products=(), **terms):
        values = {
            "kind": "amount",
            "amount_fen": 2000,
            "threshold_fen": 0,
            "total": 100,
            "per_customer": 1,
            "valid_days": 30,
            **terms,
        }
        template = CouponTemplate.objects.create(name=name, **values)
        template.categories.set(categories)
        template.products.set(products)
        return template

    return make


@pytest.fixture
def two_skus(db):
    """A 80.00 yuan SKU in 茶器 and a 60.00 yuan SKU in 香道 (child of 雅物)."""
    tea = Category.objects.create(name="茶器", kind=Kind.GOODS)
    parent = Category.objects.create(name="雅物", kind=Kind.GOODS)
    incense = Category.objects.create(name="香道", kind=Kind.GOODS, parent=parent)
    a = Sku.objects.create(
        product=Product.objects.create(category=tea, name="青瓷盖碗", kind=Kind.GOODS),
        specs={"颜色": "天青"},
        price_fen=8000,
        stock=10,
    )
    b = Sku.objects.create(
        product=Product.objects.create(category=incense, name="沉香线香", kind=Kind.GOODS),
        specs={"规格": "50支"},
        price_fen=6000,
        stock=10,
    )
    return a, b, tea, parent, incense


def _receive(api, template):
    return api.post("/api/v1/coupons/receive", {"template_id": template.pk}, format="json")


def _confirm(api, address, skus, **extra):
    body = {"items": [{"sku_id": s.pk, "quantity": 1} for s in skus], "address_id": address.pk, **extra}
    return api.post("/api/v1/orders/confirm", body, format="json")


# --- receiving ---------------------------------------------------------------------------------


def test_available_lists_what_the_caller_may_receive_with_remaining(api, make_template):
    open_one = make_template(total=3)
    make_template("停用", is_active=False)
    make_template("领完了", total=2, issued=2)
    make_template("已结束", valid_days=None, valid_to=timezone.now() - dt.timedelta(minutes=1))
    body = api.get("/api/v1/coupons/available").json()
    assert [(t["template_id"], t["name"], t["remaining"]) for t in body] == [(open_one.pk, "满100减20", 3)]
    assert body[0]["kind"] == "amount" and body[0]["amount_fen"] == 2000 and body[0]["valid_days"] == 30
    assert _receive(api, open_one).status_code == 201
    assert api.get("/api/v1/coupons/available").json() == []  # per_customer 1 reached


def test_receive_counts_total_and_per_customer(make_api, make_customer, make_template):
    template = make_template(total=3, per_customer=2)
    a, b, c = (make_api(make_customer()) for _ in range(3))
    first = _receive(a, template)
    assert first.status_code == 201
    assert first.json()["status"] == "usable" and first.json()["name"] == "满100减20"
    assert _receive(a, template).status_code == 201
    third = _receive(a, template)
    assert (third.status_code, third.json()["code"]) == (409, "limit_exceeded")
    assert third.json()["detail"]["per_customer"] == 2
    assert _receive(b, template).status_code == 201
    none_left = _receive(c, template)
    assert (none_left.status_code, none_left.json()["code"]) == (409, "limit_exceeded")
    template.refresh_from_db()
    assert (template.issued, template.remaining) == (3, 0)
    assert Coupon.objects.filter(template=template).count() == 3
    assert sorted(CouponReceipt.objects.values_list("count", flat=True)) == [1, 2]  # c: rolled back with the rest


def test_receive_refusals(api, make_template):
    assert _receive(api, make_template(is_active=False)).status_code == 404
    assert api.post("/api/v1/coupons/receive", {"template_id": 999999}, format="json").status_code == 404
    ended = make_template(valid_days=None, valid_to=timezone.now() - dt.timedelta(seconds=1))
    assert (_receive(api, ended).status_code, _receive(api, ended).json()["code"]) == (409, "invalid_state")
    assert api.post("/api/v1/coupons/receive", {"template_id": "x"}, format="json").status_code == 400
    assert Coupon.objects.count() == 0


def test_validity_fixed_window_or_days_after_receipt(customer, make_template):
    starts, ends = timezone.now() + dt.timedelta(days=1), timezone.now() + dt.timedelta(days=10)
    fixed = coupons.coupon_receive(
        template_id=make_template(valid_days=None, valid_from=starts, valid_to=ends).pk, customer_id=customer.pk
    )
    assert (fixed.valid_from, fixed.valid_until) == (starts, ends)
    now = timezone.now()
    relative = coupons.coupon_receive(template_id=make_template(valid_days=7).pk, customer_id=customer.pk, now=now)
    assert (relative.valid_from, relative.valid_until) == (now, now + dt.timedelta(days=7))


def test_me_coupons_by_status(api, customer, make_template):
    usable = coupons.coupon_receive(template_id=make_template("可用").pk, customer_id=customer.pk)
    used = coupons.coupon_receive(template_id=make_template("已用").pk, customer_id=customer.pk)
    Coupon.objects.filter(pk=used.pk).update(status="used", used_order_no="20261201000000000001")
    expired = Coupon.objects.create(
        customer=customer, title="过期", discount_fen=500, valid_until=timezone.now() - dt.timedelta(seconds=1)
    )
    page = api.get("/api/v1/me/coupons").json()
    assert page["count"] == 3
    assert {r["id"]: r["status"] for r in page["results"]} == {
        usable.pk: "usable",
        used.pk: "used",
        expired.pk: "expired",
    }
    for status, pk in (("usable", usable.pk), ("used", used.pk), ("expired", expired.pk)):
        assert [r["id"] for r in api.get(f"/api/v1/me/coupons?status={status}").json()["results"]] == [pk]
    row = api.get("/api/v1/me/coupons?status=usable").json()["results"][0]
    assert {k: row[k] for k in ("name", "kind", "amount_fen", "percent", "max_discount_fen", "threshold_fen")} == {
        "name": "可用",
        "kind": "amount",
        "amount_fen": 2000,
        "percent": 0,
        "max_discount_fen": None,
        "threshold_fen": 0,
    }
    assert row["valid_to"].endswith("+08:00")
    assert api.get("/api/v1/me/coupons?status=nope").status_code == 400


# --- pricing at confirm --------------------------------------------------------------------------


def test_confirm_lists_usable_coupons_best_first_and_applies_the_chosen(
    api, customer, address, two_skus, make_template
):
    a, b, tea, parent, incense = two_skus  # goods 8000 + 6000 = 14000 fen
    take = lambda t: coupons.coupon_receive(template_id=t.pk, customer_id=customer.pk)  # noqa: E731
    amount = take(make_template("满100减20", amount_fen=2000, threshold_fen=10000))  # 14000 >= 10000: 2000
    percent = take(
        make_template("85折最多减10元", kind="percent", amount_fen=0, percent=15, max_discount_fen=1000)
    )  # 14000 * 15% = 2100 -> cap 1000
    scoped = take(
        make_template("雅物满50减15", amount_fen=1500, threshold_fen=5000, scope="category", categories=[parent])
    )  # in scope: 香道 (parent 雅物) 6000 >= 5000: 1500
    take(
        make_template("香道满70减30", amount_fen=3000, threshold_fen=7000, scope="category", categories=[incense])
    )  # in scope 6000 < 7000: not usable
    take(
        make_template("茶器9折", kind="percent", amount_fen=0, percent=10, scope="product", products=[a.product])
    )  # in scope 8000: 800
    confirmed = _confirm(api, address, [a, b])
    assert confirmed.status_code == 200, confirmed.json()
    body = confirmed.json()
    assert [(c["name"], c["discount_fen"]) for c in body["usable_coupons"]] == [
        ("满100减20", 2000),
        ("雅物满50减15", 1500),
        ("85折最多减10元", 1000),
        ("茶器9折", 800),
    ]
    assert body["usable_coupons"][0]["id"] == amount.pk and body["coupon_fen"] == 0

    chosen = _confirm(api, address, [a, b], coupon_id=scoped.pk).json()
    assert chosen["coupon_fen"] == 1500
    assert chosen["pay_fen"] == 14000 + chosen["freight_fen"] - 1500
    created = api.post("/api/v1/orders", {"order_key": chosen["order_key"]}, format="json")
    assert created.status_code == 201 and created.json()["coupon_fen"] == 1500
    assert Coupon.objects.get(pk=scoped.pk).status == "used"
    assert [r["id"] for r in api.get("/api/v1/me/coupons?status=used").json()["results"]] == [scoped.pk]
    # used: no longer offered, and choosing it again is refused
    again = _confirm(api, address, [a, b], coupon_id=scoped.pk)
    assert (again.status_code, again.json()["code"]) == (409, "coupon_unavailable")
    assert percent.pk in [c["id"] for c in _confirm(api, address, [a, b]).json()["usable_coupons"]]


def test_coupon_out_of_scope_or_under_threshold_is_unavailable(api, customer, address, two_skus, make_template):
    a, b, *_ = two_skus
    only_b = coupons.coupon_receive(
        template_id=make_template(scope="product", products=[b.product]).pk, customer_id=customer.pk
    )
    answer = _confirm(api, address, [a], coupon_id=only_b.pk)
    assert (answer.status_code, answer.json()["code"]) == (409, "coupon_unavailable")
    assert _confirm(api, address, [a]).json()["usable_coupons"] == []


def test_discount_never_exceeds_goods_and_one_fen_is_left(api, customer, consultation, make_template):
    big = coupons.coupon_receive(template_id=make_template("大额券", amount_fen=50000).pk, customer_id=customer.pk)
    body = {"items": [{"sku_id": consultation.sku.pk, "quantity": 1}], "slot_id": consultation.slots[0].pk}
    offered = api.post("/api/v1/orders/confirm", body, format="json").json()["usable_coupons"]
    assert offered == [{"id": big.pk, "name": "大额券", "discount_fen": 29899}]
    chosen = api.post("/api/v1/orders/confirm", {**body, "coupon_id": big.pk}, format="json").json()
    assert (chosen["goods_fen"], chosen["freight_fen"], chosen["coupon_fen"], chosen["pay_fen"]) == (29900, 0, 29899, 1)


def test_not_yet_valid_coupon_is_held_but_not_usable(api, customer, address, two_skus, make_template):
    a, *_ = two_skus
    soon = make_template(
        valid_days=None, valid_from=timezone.now() + dt.timedelta(days=1), valid_to=timezone.now() + FAR
    )
    coupon = coupons.coupon_receive(template_id=soon.pk, customer_id=customer.pk)
    assert [r["id"] for r in api.get("/api/v1/me/coupons?status=usable").json()["results"]] == [coupon.pk]
    assert _confirm(api, address, [a]).json()["usable_coupons"] == []
    assert _confirm(api, address, [a], coupon_id=coupon.pk).json()["code"] == "coupon_unavailable"


def test_cancel_gives_the_coupon_back_while_valid(api, customer, address, two_skus, make_template):
    a, *_ = two_skus
    coupon = coupons.coupon_receive(template_id=make_template().pk, customer_id=customer.pk)
    key = _confirm(api, address, [a], coupon_id=coupon.pk).json()["order_key"]
    order_no = api.post("/api/v1/orders", {"order_key": key}, format="json").json()["order_no"]
    assert Coupon.objects.get(pk=coupon.pk).status == "used"
    assert api.post(f"/api/v1/orders/{order_no}/cancel").status_code == 200
    assert Coupon.objects.get(pk=coupon.pk).status == "available"
    # expired meanwhile: stays used
    key = _confirm(api, address, [a], coupon_id=coupon.pk).json()["order_key"]
    order_no = api.post("/api/v1/orders", {"order_key": key}, format="json").json()["order_no"]
    Coupon.objects.filter(pk=coupon.pk).update(valid_until=timezone.now() - dt.timedelta(seconds=1))
    assert api.post(f"/api/v1/orders/{order_no}/cancel").status_code == 200
    assert Coupon.objects.get(pk=coupon.pk).status == "used"


def test_flash_sale_confirm_offers_no_coupons(api, customer, address, make_sale, make_template):
    coupons.coupon_receive(template_id=make_template().pk, customer_id=customer.pk)
    sale = make_sale()
    body = {"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": sale.pk, "address_id": address.pk}
    assert api.post("/api/v1/orders/confirm", body, format="json").json()["usable_coupons"] == []


# --- staff issues --------------------------------------------------------------------------------


def test_issue_to_one_customer_is_done_at_once_and_idempotent(customer, make_template):
    template = make_template(per_customer=1)
    issue = coupons.coupon_issue_start(template_id=template.pk, customer_id=customer.pk, created_by="staff")
    assert (issue.status, issue.granted) == ("done", 1)
    assert coupons.coupon_issue_run(issue_id=issue.pk) == "done"
    assert Coupon.objects.filter(customer=customer, batch=issue).count() == 1
    # staff issues do not use up the customer's own receive allowance
    assert coupons.coupon_receive(template_id=template.pk, customer_id=customer.pk).template_id == template.pk
    template.refresh_from_db()
    assert template.issued == 2


def test_issue_by_filter_runs_in_the_background_once_per_customer(
    make_customer, make_template, django_capture_on_commit_callbacks, queued
):
    rich = [make_customer(points=500) for _ in range(3)]
    make_customer(points=10)
    template = make_template(total=10)
    with django_capture_on_commit_callbacks(execute=True):
        issue = coupons.coupon_issue_start(template_id=template.pk, min_points=100, created_by="staff")
    assert issue.status == "pending"
    assert queued("default") == ["apps.marketing.tasks.coupon_issue_run"]
    assert coupons.coupon_issue_run(issue_id=issue.pk) == "done"
    CouponIssue.objects.filter(pk=issue.pk).update(status="running", cursor=0)  # as if redelivered mid-way
    coupons.coupon_issue_run(issue_id=issue.pk)
    issue.refresh_from_db()
    assert (issue.status, issue.granted, issue.skipped) == ("done", 3, 0)
    assert sorted(Coupon.objects.filter(batch=issue).values_list("customer_id", flat=True)) == sorted(
        c.pk for c in rich
    )
    template.refresh_from_db()
    assert template.issued == 3


def test_issue_stops_when_the_template_runs_out(make_customer, make_template):
    for _ in range(5):
        make_customer()
    template = make_template(total=4, issued=1)
    issue = coupons.coupon_issue_start(template_id=template.pk)
    coupons.coupon_issue_run(issue_id=issue.pk)
    issue.refresh_from_db()
    assert (issue.status, issue.granted, issue.skipped) == ("done", 3, 2)
    template.refresh_from_db()
    assert (template.issued, template.total) == (4, 4)


def test_redispatch_pushes_unfinished_issues(make_template, customer, queued):
    template = make_template()
    CouponIssue.objects.create(template=template)
    CouponIssue.objects.create(template=template, status="done")
    assert coupons.coupon_issues_redispatch() == 1
    assert queued("default") == ["apps.marketing.tasks.coupon_issue_run"]


def test_template_validation_names_the_fields():
    from starmall.errors import InvalidInput

    with pytest.raises(InvalidInput) as caught:
        coupons.coupon_template_validate(
            kind="percent",
            amount_fen=0,
            percent=120,
            max_discount_fen=None,
            valid_from=None,
            valid_to=None,
            valid_days=None,
            total=1,
            scope="category",
            categories=[],
            issued=5,
        )
    assert set(caught.value.detail) == {"percent", "valid_to", "total", "categories"}


def test_full_refund_gives_the_coupon_back_while_valid(make_customer, make_api, consultation, make_template):
    from apps.accounts import wallet
    from apps.payments import refunds
    from apps.payments.models import Refund

    customer = make_customer()
    wallet.balance_adjust(customer_id=customer.pk, amount_fen=100000, ref="opening")
    api = make_api(customer)
    coupon = coupons.coupon_receive(template_id=make_template(amount_fen=5000).pk, customer_id=customer.pk)
    body = {
        "items": [{"sku_id": consultation.sku.pk, "quantity": 1}],
        "slot_id": consultation.slots[-1].pk,
        "coupon_id": coupon.pk,
    }
    key = api.post("/api/v1/orders/confirm", body, format="json").json()["order_key"]
    order = api.post("/api/v1/orders", {"order_key": key}, format="json").json()
    assert order["coupon_fen"] == 5000 and order["pay_fen"] == 24900
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
    assert Coupon.objects.get(pk=coupon.pk).status == "used"
    refund = api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "时间有变"}, format="json")
    assert refund.status_code == 202 and refund.json()["status"] == "approved"  # slot days away: automatic
    for row in Refund.objects.filter(order__order_no=order["order_no"], status="pending"):
        assert refunds.refund_execute(refund_id=row.pk) == "success"
    assert api.get(f"/api/v1/orders/{order['order_no']}").json()["status"] == "refunded"
    assert Coupon.objects.get(pk=coupon.pk).status == "available"
    assert [r["id"] for r in api.get("/api/v1/me/coupons?status=usable").json()["results"]] == [coupon.pk]
