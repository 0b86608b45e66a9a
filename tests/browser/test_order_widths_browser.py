"""The order list and the order page at a phone's width (390 px) and a laptop's (1,366 px) in
Chromium: no sideways page scrolling, the order page's cards stacked (no two overlap), and staff
do the work there — a remark, a shipment, 改价, a pickup verification — each checked in the
database. Screenshots in var/test-screenshots/ (40-*)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from apps.accounts.models import Address, Customer
from apps.backoffice.roles import sync_roles
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order, OrderStatus, Shipment
from apps.payments import balance
from apps.stores.models import Store, StoreStaff

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "pw-browser-width"
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}


@pytest.fixture
def login(browser, base_url):
    """``login(username, viewport)`` -> a logged-in page of that size (Chinese locale)."""
    contexts = []

    def make(username: str, viewport: dict):
        context = browser.new_context(viewport=viewport, locale="zh-CN")
        contexts.append(context)
        page = context.new_page()
        page.goto(f"{base_url}/admin/login/?next=/admin/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base_url}/admin/", timeout=15000)
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def shop(make_customer, make_sku):
    """A superuser, a store with its clerk, two express orders paid from the balance, one
    unpaid, one paid pickup order (its code returned)."""
    sync_roles(Group, Permission)
    get_user_model().objects.create_superuser("owner", password=PASSWORD)
    store = Store.objects.create(name="西湖店", address="文三路100号", lat="30.2789", lng="120.1452")
    clerk = get_user_model().objects.create_user("clerk", password=PASSWORD, is_staff=True)
    clerk.groups.add(Group.objects.get(name="门店店员"))
    StoreStaff.objects.create(user=clerk, store=store)
    customer = make_customer(balance_fen=1_000_000)
    Customer.objects.filter(pk=customer.pk).update(nickname="一位名字很长很长很长的顾客昵称", phone="13900001111")
    address = Address.objects.create(
        customer=customer,
        name="欧阳收货人",
        phone="13812345678",
        province="浙江省",
        city="杭州市",
        district="西湖区",
        detail="文三路100号某某大厦二十三层2301室（请放前台）",
    )
    sku = make_sku(price_fen=12800, stock=20)
    orders = []
    for pay in (True, True, False):
        key = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}], address_id=address.pk)
        order, _ = order_create(customer=customer, order_key=key["order_key"])
        if pay:
            balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        orders.append(order.order_no)
    key = order_confirm(
        customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}], delivery="pickup", store_id=store.pk
    )
    pickup, _ = order_create(customer=customer, order_key=key["order_key"])
    balance.payment_balance_pay(order_no=pickup.order_no, customer_id=customer.pk)
    return {"orders": orders, "pickup": Order.objects.get(pk=pickup.pk)}


def _page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def _scrolled_sideways(page, selector: str) -> list[str]:
    """``selector``'s element and its ancestors that scroll sideways (wider inside than their box)
    or end past the window's right edge: a list cut off at the right, to be scrolled."""
    return page.evaluate(
        """selector => {
            const out = [];
            for (let el = document.querySelector(selector); el && el !== document.body; el = el.parentElement) {
                const cut = el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible";
                if (cut || el.getBoundingClientRect().right > window.innerWidth + 1) out.push(el.tagName + "." + el.className);
            }
            return out;
        }""",
        selector,
    )


def _overlaps(page, selector: str) -> list:
    """Pairs of elements matching ``selector`` whose boxes intersect (visible ones only)."""
    boxes = [box for box in (el.bounding_box() for el in page.locator(selector).all()) if box]
    pairs = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (
                a["x"] + a["width"] <= b["x"] + 0.5
                or b["x"] + b["width"] <= a["x"] + 0.5
                or a["y"] + a["height"] <= b["y"] + 0.5
                or b["y"] + b["height"] <= a["y"] + 0.5
            )
            if not apart:
                pairs.append((a, b))
    return pairs


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["390", "1366"])
def test_order_list_and_page_fit_the_window(login, base_url, shot, shop, viewport):
    width = viewport["width"]
    page = login("owner", viewport)
    page.goto(f"{base_url}/admin/orders/order/")
    assert page.locator("#result_list tbody tr").count() == 4
    assert "欧阳收货人" in page.locator("#result_list").inner_text()
    shot(page, f"40-order-list-{width}")
    assert _page_width(page) <= width, _page_width(page)
    assert _scrolled_sideways(page, "#result_list") == []
    page.goto(f"{base_url}/admin/orders/order/?q=13812345678")  # the receiver's phone
    assert page.locator("#result_list tbody tr").count() == 3
    order = Order.objects.get(order_no=shop["orders"][0])
    page.goto(f"{base_url}/admin/orders/order/{order.pk}/change/")
    shot(page, f"41-order-page-{width}")
    assert _page_width(page) <= width, _page_width(page)
    assert _overlaps(page, "#order-summary .bo-box") == []


def test_remark_ship_and_price_change_at_390(login, base_url, shot, shop):
    page = login("owner", PHONE)
    order = Order.objects.get(order_no=shop["orders"][0])
    page.goto(f"{base_url}/admin/orders/order/{order.pk}/change/")
    page.fill("#remark-form textarea", "顾客要求周末送达")
    page.click("#remark-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert Order.objects.get(pk=order.pk).merchant_remark == "顾客要求周末送达"
    page.click("#order-ship-link")
    page.wait_for_load_state("networkidle")
    shot(page, "42-ship-form-390")
    assert _page_width(page) <= 390, _page_width(page)
    page.select_option(f"select[name=carrier_{order.pk}]", "shunfeng")
    page.fill(f"input[name=tracking_{order.pk}]", "SF1234567890")
    page.click("input[type=submit][value=发货]")
    page.wait_for_load_state("networkidle")
    assert Order.objects.get(pk=order.pk).status == OrderStatus.SHIPPED
    assert Shipment.objects.get(order=order).tracking_no == "SF1234567890"
    shot(page, "43-order-shipped-390")

    unpaid = Order.objects.get(order_no=shop["orders"][2])
    page.goto(f"{base_url}/admin/orders/order/{unpaid.pk}/change/")
    page.click("#price-form >> xpath=ancestor::details/summary")
    assert _page_width(page) <= 390, _page_width(page)
    page.fill("#price-form input[name=pay_yuan]", "１２")  # full-width digits: refused
    page.fill("#price-form input[name=reason]", "老顾客优惠")
    page.click("#price-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "全角" in page.content() and Order.objects.get(pk=unpaid.pk).pay_fen == 12800
    page.click("#price-form >> xpath=ancestor::details/summary")
    page.fill("#price-form input[name=pay_yuan]", "120.00")
    page.fill("#price-form input[name=reason]", "老顾客优惠")
    page.click("#price-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert Order.objects.get(pk=unpaid.pk).pay_fen == 12800  # the confirmation page first: nothing moved
    assert _page_width(page) <= 390, _page_width(page)
    page.click("#money-confirm input[type=submit]")
    page.wait_for_load_state("networkidle")
    assert Order.objects.get(pk=unpaid.pk).pay_fen == 12000
    shot(page, "44-order-price-changed-390")


def test_store_clerk_verifies_a_pickup_at_390(login, base_url, shot, shop):
    pickup = shop["pickup"]
    page = login("clerk", PHONE)
    page.goto(f"{base_url}/admin/stores/pickuporder/verify/")
    assert _page_width(page) <= 390, _page_width(page)
    page.fill("#pickup-code", pickup.pickup_code)
    page.click("#pickup-verify")
    page.wait_for_load_state("networkidle")
    assert page.locator("#verified-order").inner_text() == pickup.order_no
    assert _page_width(page) <= 390, _page_width(page)
    shot(page, "45-pickup-verified-390")
    assert Order.objects.get(pk=pickup.pk).status == OrderStatus.COMPLETED
