"""Flash sales (秒杀) through the API: list, confirm, create, cancel, refund — with the values
of the sale's stock and sold, the SKU's stock, the customer's allowance and the money."""

import datetime as dt

import pytest
from django.db.models import Sum
from django.utils import timezone

from apps.accounts.models import Address, Coupon, Customer
from apps.catalog.models import Sku
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders import shipments
from apps.orders.models import AfterSale, Order, OrderLine
from apps.payments import refunds

pytestmark = pytest.mark.django_db

CONFIRM, CREATE = "/api/v1/orders/confirm", "/api/v1/orders"


def state(sale):
    """(sale stock, sale sold, SKU stock) as stored now."""
    sale = FlashSale.objects.get(pk=sale.pk)
    return sale.stock, sale.sold, Sku.objects.get(pk=sale.sku_id).stock


def allowance(sale, customer):
    return (
        FlashSalePurchase.objects.filter(sale=sale, customer=customer).values_list("quantity", flat=True).first() or 0
    )


def buyer(make_customer, make_api, **fields):
    customer = make_customer(**fields)
    address = Address.objects.create(
        customer=customer,
        name="买家",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        detail="1号",
        is_default=True,
    )
    return customer, make_api(customer), address


def end_sale(sale):
    FlashSale.objects.filter(pk=sale.pk).update(ends_at=timezone.now() - dt.timedelta(seconds=1))


# --- list -------------------------------------------------------------------------------------


def test_flash_sale_list_live_upcoming_and_both(make_sale, flash_sku, make_api, django_assert_max_num_queries):
    live = make_sale(title="正在秒杀")
    upcoming = make_sale(starts_in=60, title="即将开始")
    make_sale(starts_in=-120, lasts=60, title="已结束")
    make_sale(is_active=False, title="已暂停")
    anonymous = make_api()

    with django_assert_max_num_queries(1):
        response = anonymous.get("/api/v1/flash-sales?status=live")
    assert response.status_code == 200
    assert response.json() == [
        {
            "id": live.pk,
            "title": "正在秒杀",
            "sku_id": flash_sku.pk,
            "product_id": flash_sku.product_id,
            "name": "青瓷盖碗",
            "specs": {"颜色": "天青"},
            "price_fen": 9900,
            "original_price_fen": 12800,
            "starts_at": timezone.localtime(live.starts_at).isoformat(),
            "ends_at": timezone.localtime(live.ends_at).isoformat(),
            "stock": 5,
            "sold": 0,
            "limit_per_customer": 2,
        }
    ]
    assert response.json()[0]["starts_at"].endswith("+08:00")
    assert [s["id"] for s in anonymous.get("/api/v1/flash-sales?status=upcoming").json()] == [upcoming.pk]
    assert [s["id"] for s in anonymous.get("/api/v1/flash-sales").json()] == [live.pk, upcoming.pk]


def test_flash_sale_list_is_public_even_with_a_bad_token(make_sale, client):
    sale = make_sale()
    for header in ({}, {"HTTP_AUTHORIZATION": "Bearer expired-or-made-up"}, {"HTTP_AUTHORIZATION": "Bearer"}):
        response = client.get("/api/v1/flash-sales", {"status": "live"}, **header)
        assert response.status_code == 200, header
        assert [s["id"] for s in response.json()] == [sale.pk]


def test_flash_sale_list_bad_status_is_400(client):
    response = client.get("/api/v1/flash-sales", {"status": "past"})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert "status" in response.json()["detail"]


def test_flash_sale_list_stock_is_capped_by_the_sku(make_sale, flash_sku, client):
    make_sale(stock=5)
    Sku.objects.filter(pk=flash_sku.pk).update(stock=3)
    assert client.get("/api/v1/flash-sales").json()[0]["stock"] == 3


# --- confirm and create -----------------------------------------------------------------------


def test_flash_sale_confirm_prices_at_the_sale_and_writes_nothing(api, customer, address, make_sale):
    sale = make_sale()
    response = api.post(
        CONFIRM,
        {"items": [{"sku_id": sale.sku_id, "quantity": 2}], "flash_sale_id": sale.pk, "address_id": address.pk},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [(line["price_fen"], line["quantity"], line["amount_fen"]) for line in body["lines"]] == [(9900, 2, 19800)]
    assert (body["goods_fen"], body["freight_fen"], body["coupon_fen"], body["pay_fen"]) == (19800, 0, 0, 19800)
    assert body["flash_sale_id"] == sale.pk
    assert state(sale) == (5, 0, 20)
    assert FlashSalePurchase.objects.count() == 0


def test_flash_sale_create_takes_the_sale_the_sku_and_the_allowance(api, customer, address, make_sale, buy):
    sale = make_sale()
    _, created = buy(api, sale, 2, address=address)
    assert created.status_code == 201, created.json()
    order = created.json()
    assert (order["flash_sale_id"], order["goods_fen"], order["pay_fen"]) == (sale.pk, 19800, 19800)
    assert [(line["sku_id"], line["price_fen"], line["quantity"], line["amount_fen"]) for line in order["lines"]] == [
        (sale.sku_id, 9900, 2, 19800)
    ]
    assert Order.objects.get(order_no=order["order_no"]).flash_sale_id == sale.pk
    assert state(sale) == (3, 2, 18)
    assert allowance(sale, customer) == 2
    again = api.post(CREATE, {"order_key": Order.objects.get().order_key}, format="json")
    assert again.status_code == 200 and again.json()["order_no"] == order["order_no"]
    assert state(sale) == (3, 2, 18)


def test_flash_sale_plain_order_of_the_same_sku_pays_the_normal_price(api, address, make_sale, place_order):
    sale = make_sale()
    order = place_order(api, items=[(sale.sku, 1)], address=address)
    assert (order["flash_sale_id"], order["lines"][0]["price_fen"], order["pay_fen"]) == (None, 12800, 12800)
    assert state(sale) == (5, 0, 19)


def test_flash_sale_limit_counts_the_customers_live_orders(make_customer, make_api, make_sale, buy):
    sale = make_sale(limit=2)
    customer, api, address = buyer(make_customer, make_api)
    assert buy(api, sale, 1, address=address)[1].status_code == 201
    over, _ = buy(api, sale, 2, address=address)
    assert over.status_code == 409
    assert over.json()["code"] == "limit_exceeded"
    assert over.json()["detail"] == {"flash_sale_id": sale.pk, "limit_per_customer": 2, "held": 1, "requested": 2}
    assert buy(api, sale, 1, address=address)[1].status_code == 201
    assert buy(api, sale, 1, address=address)[0].json()["code"] == "limit_exceeded"
    _, other, other_address = buyer(make_customer, make_api)
    assert buy(other, sale, 3, address=other_address)[0].json()["code"] == "limit_exceeded"  # 3 > 2 at once
    assert state(sale) == (3, 2, 18)
    assert allowance(sale, customer) == 2


def test_flash_sale_limit_is_taken_at_confirm_from_the_redis_allowance(make_customer, make_api, make_sale):
    sale = make_sale(limit=2)
    customer, api, address = buyer(make_customer, make_api)
    body = {"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": sale.pk, "address_id": address.pk}
    assert [api.post(CONFIRM, body, format="json").status_code for _ in range(2)] == [200, 200]
    third = api.post(CONFIRM, body, format="json")  # two drafts hold the allowance: no order yet
    assert third.status_code == 409
    assert third.json() == {
        "code": "limit_exceeded",
        "message": "已超过本场秒杀的限购数量。",
        "detail": {"flash_sale_id": sale.pk, "limit_per_customer": 2, "held": 2, "requested": 1},
    }
    assert state(sale) == (5, 0, 20)  # the database is untouched until create
    assert allowance(sale, customer) == 0


def test_flash_sale_limit_is_checked_again_at_create(make_customer, make_api, make_sale, monkeypatch):
    from apps.marketing import flash_quota

    def redis_fails(name):
        raise ConnectionError("Redis down")

    monkeypatch.setattr(flash_quota, "script", redis_fails)  # drafts stored plainly: no reservation
    sale = make_sale(limit=2)
    customer, api, address = buyer(make_customer, make_api)
    keys = []
    for _ in range(3):  # three confirms pass: nothing is held yet
        confirmed = api.post(
            CONFIRM,
            {"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": sale.pk, "address_id": address.pk},
            format="json",
        )
        assert confirmed.status_code == 200
        keys.append(confirmed.json()["order_key"])
    assert [api.post(CREATE, {"order_key": k}, format="json").status_code for k in keys[:2]] == [201, 201]
    third = api.post(CREATE, {"order_key": keys[2]}, format="json")
    assert third.status_code == 409
    assert third.json()["code"] == "limit_exceeded"
    assert state(sale) == (3, 2, 18)  # nothing of the third kept
    assert allowance(sale, customer) == 2
    assert Order.objects.count() == 2


@pytest.mark.parametrize("when", ["upcoming", "ended", "paused"])
def test_flash_sale_outside_its_window_is_invalid_state(api, address, make_sale, buy, when):
    sale = {
        "upcoming": lambda: make_sale(starts_in=30),
        "ended": lambda: make_sale(starts_in=-120, lasts=60),
        "paused": lambda: make_sale(is_active=False),
    }[when]()
    confirmed, _ = buy(api, sale, 1, address=address)
    assert confirmed.status_code == 409
    assert confirmed.json()["code"] == "invalid_state"
    assert confirmed.json()["detail"]["flash_sale_id"] == sale.pk
    assert state(sale) == (5, 0, 20)


def test_flash_sale_create_after_the_end_keeps_nothing(api, customer, address, make_sale):
    sale = make_sale()
    key = api.post(
        CONFIRM,
        {"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": sale.pk, "address_id": address.pk},
        format="json",
    ).json()["order_key"]
    end_sale(sale)
    created = api.post(CREATE, {"order_key": key}, format="json")
    assert created.status_code == 409
    assert created.json()["code"] == "invalid_state"
    assert state(sale) == (5, 0, 20)
    assert allowance(sale, customer) == 0
    assert Order.objects.count() == 0


def redis_quota_fails(monkeypatch):
    """The sale's Redis quota unreachable: drafts are stored plainly and create decides alone."""
    from apps.marketing import flash_quota

    def fails(name):
        raise ConnectionError("Redis down")

    monkeypatch.setattr(flash_quota, "script", fails)


def test_flash_sale_sold_out_at_confirm_and_at_create(make_customer, make_api, make_sale, buy, monkeypatch):
    sale = make_sale(stock=1, limit=1)
    first, api_a, address_a = buyer(make_customer, make_api)
    second, api_b, address_b = buyer(make_customer, make_api)
    redis_quota_fails(monkeypatch)  # both get a draft: the database alone decides at create
    keys = [
        api.post(
            CONFIRM,
            {"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": sale.pk, "address_id": address.pk},
            format="json",
        ).json()["order_key"]
        for api, address in ((api_a, address_a), (api_b, address_b))
    ]
    assert api_a.post(CREATE, {"order_key": keys[0]}, format="json").status_code == 201
    lost = api_b.post(CREATE, {"order_key": keys[1]}, format="json")
    assert lost.status_code == 409
    assert lost.json()["code"] == "insufficient_stock"
    assert lost.json()["detail"]["flash_sale_id"] == sale.pk
    assert state(sale) == (0, 1, 19)
    assert (allowance(sale, first), allowance(sale, second)) == (1, 0)
    late, _ = buy(api_b, sale, 1, address=address_b)
    assert (late.status_code, late.json()["code"]) == (409, "insufficient_stock")


def test_flash_sale_needs_the_skus_own_stock_too(api, address, make_sale, flash_sku, buy):
    sale = make_sale(stock=5)
    Sku.objects.filter(pk=flash_sku.pk).update(stock=1)
    confirmed, _ = buy(api, sale, 2, address=address)
    assert (confirmed.status_code, confirmed.json()["code"]) == (409, "insufficient_stock")
    assert state(sale) == (5, 0, 1)


def test_flash_sale_wrong_items_coupon_and_unknown_sale(api, customer, address, make_sale, make_sku):
    sale = make_sale()
    other = make_sku(price_fen=500, stock=10, name="茶巾")

    def confirm(items, **extra):
        return api.post(
            CONFIRM, {"items": items, "flash_sale_id": sale.pk, "address_id": address.pk, **extra}, format="json"
        )

    two = confirm([{"sku_id": sale.sku_id, "quantity": 1}, {"sku_id": other.pk, "quantity": 1}])
    assert (two.status_code, two.json()["code"], list(two.json()["detail"])) == (400, "invalid", ["items"])
    wrong = confirm([{"sku_id": other.pk, "quantity": 1}])
    assert (wrong.status_code, wrong.json()["code"]) == (400, "invalid")
    coupon = Coupon.objects.create(
        customer=customer,
        title="满100减20",
        discount_fen=2000,
        min_spend_fen=100,
        valid_until="2099-01-01T00:00:00+08:00",
    )
    with_coupon = confirm([{"sku_id": sale.sku_id, "quantity": 1}], coupon_id=coupon.pk)
    assert (with_coupon.status_code, with_coupon.json()["code"]) == (409, "coupon_unavailable")
    unknown = api.post(
        CONFIRM,
        {"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": 999999, "address_id": address.pk},
        format="json",
    )
    assert (unknown.status_code, unknown.json()["code"]) == (404, "not_found")
    garbage = api.post(
        CONFIRM,
        {"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": "一", "address_id": address.pk},
        format="json",
    )
    assert (garbage.status_code, garbage.json()["code"]) == (400, "invalid")
    assert state(sale) == (5, 0, 20)


def test_flash_sale_order_may_use_points(make_customer, make_api, make_sale, buy, settings):
    sale = make_sale()
    customer, api, address = buyer(make_customer, make_api, points=500)
    _, created = buy(api, sale, 1, address=address, use_points=300)
    assert created.status_code == 201
    points_fen = 300 * settings.POINT_VALUE_FEN
    assert (created.json()["points_fen"], created.json()["pay_fen"]) == (points_fen, 9900 - points_fen)
    assert Customer.objects.get(pk=customer.pk).points == 200


# --- giving units back -------------------------------------------------------------------------


def redis_quota(sale):
    """(quota, {customer_id: units held}) of the sale in Redis (apps.marketing.flash_quota)."""
    from django_redis import get_redis_connection

    from apps.marketing import flash_quota

    conn = get_redis_connection("default")
    quota = conn.get(flash_quota.key(sale.pk, "quota"))
    return (
        int(quota) if quota is not None else None,
        {int(k): int(v) for k, v in conn.hgetall(flash_quota.key(sale.pk, "held")).items()},
    )


def test_flash_sale_cancel_while_live_gives_units_to_the_sale_and_the_sku(
    api, customer, address, make_sale, buy, django_capture_on_commit_callbacks
):
    sale = make_sale()
    with django_capture_on_commit_callbacks(execute=True):  # as after the real commits
        order = buy(api, sale, 2, address=address)[1].json()
    assert state(sale) == (3, 2, 18)
    assert redis_quota(sale) == (3, {customer.pk: 2})
    with django_capture_on_commit_callbacks(execute=True):
        cancelled = api.post(f"/api/v1/orders/{order['order_no']}/cancel")
    assert redis_quota(sale) == (5, {})
    assert (cancelled.status_code, cancelled.json()["status"]) == (200, "cancelled")
    assert state(sale) == (5, 0, 20)
    assert allowance(sale, customer) == 0
    assert api.post(f"/api/v1/orders/{order['order_no']}/cancel").status_code == 409
    assert state(sale) == (5, 0, 20)  # once
    assert buy(api, sale, 2, address=address)[1].status_code == 201  # the allowance is back
    assert state(sale) == (3, 2, 18)


def test_flash_sale_cancel_after_the_end_gives_units_to_the_sku_only(api, customer, address, make_sale, buy):
    sale = make_sale()
    order = buy(api, sale, 2, address=address)[1].json()
    end_sale(sale)
    assert api.post(f"/api/v1/orders/{order['order_no']}/cancel").status_code == 200
    assert state(sale) == (3, 0, 20)  # the sale's stock stays as it ended; the units sell at 128.00
    assert allowance(sale, customer) == 0


def _pay_and_refund(api, order_no):
    paid = api.post(f"/api/v1/orders/{order_no}/pay", {"method": "balance"}, format="json")
    assert paid.status_code == 200, paid.json()
    return order_no


def _refund(api, order_no):
    assert api.post(f"/api/v1/orders/{order_no}/refund", {"reason": "不想要了"}, format="json").status_code == 202
    refund = refunds.after_sale_approve(
        after_sale_id=AfterSale.objects.get(order__order_no=order_no).pk, actor="staff:test"
    )
    assert refunds.refund_execute(refund_id=refund.pk) == "success"
    assert Order.objects.get(order_no=order_no).status == "refunded"


def test_flash_sale_refund_before_shipping_restocks_the_live_sale(make_customer, make_api, make_sale, buy):
    sale = make_sale()
    customer, api, address = buyer(make_customer, make_api, balance_fen=50000)
    order = buy(api, sale, 2, address=address)[1].json()
    _pay_and_refund(api, order["order_no"])
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000 - 19800
    _refund(api, order["order_no"])
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000
    assert state(sale) == (5, 0, 20)
    assert allowance(sale, customer) == 0


def test_flash_sale_refund_after_shipping_gives_back_the_allowance_not_the_units(
    make_customer, make_api, make_sale, buy, django_capture_on_commit_callbacks
):
    sale = make_sale(limit=2)
    customer, api, address = buyer(make_customer, make_api, balance_fen=50000)
    order = buy(api, sale, 2, address=address)[1].json()
    _pay_and_refund(api, order["order_no"])
    assert shipments.order_ship(order=Order.objects.get(order_no=order["order_no"]), actor="staff:test")
    with django_capture_on_commit_callbacks(execute=True):  # as after the real commit
        _refund(api, order["order_no"])
    assert redis_quota(sale) == (3, {})  # the allowance is back in Redis too, the units are not
    assert state(sale) == (3, 2, 18)  # the goods left the warehouse: no units come back
    assert allowance(sale, customer) == 0  # but the order is not live: the customer may buy again
    assert buy(api, sale, 2, address=address)[1].status_code == 201
    assert state(sale) == (1, 4, 16)


def _live_units(sku_id, sale=None):
    lines = OrderLine.objects.filter(sku_id=sku_id).exclude(order__status__in=("cancelled", "refunded"))
    if sale is not None:
        lines = lines.filter(order__flash_sale=sale)
    return lines.aggregate(n=Sum("quantity"))["n"] or 0


def test_flash_sale_conservation_over_orders_and_cancels(
    make_customer, make_api, make_sale, place_order, buy, django_capture_on_commit_callbacks
):
    """initial SKU stock = SKU stock + units in live orders; sold = the sale's live units;
    while the sale has not ended, stock + sold = its quota (6)."""
    sale = make_sale(stock=6, limit=3)
    buyers = [buyer(make_customer, make_api) for _ in range(4)]

    def check(live=True):
        stock, sold, sku_stock = state(sale)
        assert sku_stock + _live_units(sale.sku_id) == 20
        assert sold == _live_units(sale.sku_id, sale)
        if live:
            assert stock + sold == 6

    (_, api_a, addr_a), (_, api_b, addr_b), (_, api_c, addr_c), (_, api_d, addr_d) = buyers
    a = buy(api_a, sale, 3, address=addr_a)[1].json()
    check()
    b = buy(api_b, sale, 2, address=addr_b)[1].json()
    place_order(api_c, items=[(sale.sku, 4)], address=addr_c)  # a plain order of the same SKU
    buy(api_c, sale, 1, address=addr_c)
    check()
    assert state(sale) == (0, 6, 10)
    assert buy(api_d, sale, 1, address=addr_d)[0].json()["code"] == "insufficient_stock"
    with django_capture_on_commit_callbacks(execute=True):  # the Redis quota follows after commit
        api_b.post(f"/api/v1/orders/{b['order_no']}/cancel")
    check()
    assert buy(api_d, sale, 2, address=addr_d)[1].status_code == 201
    check()
    end_sale(sale)
    api_a.post(f"/api/v1/orders/{a['order_no']}/cancel")
    check(live=False)
    assert state(sale) == (0, 3, 13)
