"""Every staff role of apps/backoffice/roles.py (and a view-only login) in Chromium at a laptop's
width (1,366 px) and a phone's (390 px): one login per role, its pages opened at both widths —
no page wider than the window, no JavaScript error, and where the role lacks an action the page
says which role has it (the 403 page, or the MONEY_ACTIONS "who may" lines). The 公众号 role
also builds a menu in the visual editor and saves it (checked in the database), and sees only
the chosen reply type's fields. Screenshots in var/screenshots/roles-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from apps.accounts.models import Address
from apps.backoffice.roles import sync_roles, who_may
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import AfterSale, Order
from apps.payments import balance
from apps.stores.models import Store, StoreStaff
from apps.wechat_official.models import Menu

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "pw-browser-roles"
WIDTHS = {"1366": {"width": 1366, "height": 768}, "390": {"width": 390, "height": 844}}
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
VIEW_ONLY = ["orders.view_order", "orders.view_aftersale", "payments.view_refund", "catalog.view_product"]

ORDERS, AFTERSALES, REFUNDS, PRODUCTS = (
    "/admin/orders/order/",
    "/admin/orders/aftersale/",
    "/admin/payments/refund/",
    "/admin/catalog/product/",
)
MENU, REPLY = "/admin/wechat_official/menu/add/", "/admin/wechat_official/replyrule/add/"
ORDER = "ORDER"  # the order page of the order with a refund request waiting
# "who may" lines, by MONEY_ACTIONS key: the page must show roles.who_may(key), e.g.
# "改价：运营（±10 % 以内）、财务" (limits from settings)
PRICE_HINT, REFUND_HINT, BATCH_HINT, REJECT_HINT = "price", "refund", "batch_refund", "reject_refund"

#: login -> (role, [(page, expectation)]): "ok" (the page opens), ("denied", roles the 403 page
#: names), ("hints", what the "who may" lines say)
ROLES = {
    "ops": (
        "运营",
        [
            (ORDERS, "ok"),
            (ORDER, ("hints", [REFUND_HINT, BATCH_HINT])),
            (AFTERSALES, ("hints", [REFUND_HINT])),
            (PRODUCTS, "ok"),
            (REFUNDS, ("denied", ["客服", "财务"])),
            (MENU, ("denied", ["公众号"])),
        ],
    ),
    "service": (
        "客服",
        [
            (ORDERS, "ok"),
            (ORDER, ("hints", [PRICE_HINT, BATCH_HINT])),
            (AFTERSALES, "ok"),
            (REFUNDS, "ok"),
            (PRODUCTS, ("denied", ["运营"])),
        ],
    ),
    "finance": (
        "财务",
        [(ORDERS, "ok"), (ORDER, "ok"), (AFTERSALES, "ok"), (REFUNDS, "ok"), (PRODUCTS, ("denied", ["运营"]))],
    ),
    "teacher": (
        "老师",
        [("/admin/appointments/slot/", "ok"), ("/admin/appointments/booking/", "ok"), (ORDERS, ("denied", ["运营"]))],
    ),
    "store": ("门店店员", [("/admin/stores/pickuporder/", "ok"), (ORDERS, ("denied", ["客服", "财务"]))]),
    "official": ("公众号", [(MENU, "ok"), (REPLY, "ok"), (ORDERS, ("denied", ["运营", "客服"]))]),
    "viewer": (
        None,
        [
            (ORDERS, "ok"),
            (ORDER, ("hints", [PRICE_HINT, REFUND_HINT, BATCH_HINT])),
            (AFTERSALES, ("hints", [REFUND_HINT, REJECT_HINT])),
            (REFUNDS, "ok"),
            (PRODUCTS, "ok"),
        ],
    ),
}


@pytest.fixture
def shop(make_customer, make_sku, make_api):
    """The roles and one login each (``viewer``: only VIEW_ONLY), a store for the clerk, two
    goods orders paid from the balance, the second with a refund request waiting."""
    sync_roles(Group, Permission)
    users = get_user_model().objects
    for login, (role, _) in ROLES.items():
        user = users.create_user(login, password=PASSWORD, is_staff=True)
        if role:
            user.groups.add(Group.objects.get(name=role))
    viewer = users.get(username="viewer")
    for spec in VIEW_ONLY:
        app_label, codename = spec.split(".")
        viewer.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    store = Store.objects.create(name="西湖店", address="文三路100号", lat="30.2789", lng="120.1452")
    StoreStaff.objects.create(user=users.get(username="store"), store=store)
    customer = make_customer(balance_fen=1_000_000)
    address = Address.objects.create(
        customer=customer, name="欧阳收货人", phone="13812345678", province="浙江省", city="杭州市",
        district="西湖区", detail="文三路100号某某大厦二十三层2301室（请放前台）",
    )  # fmt: skip
    sku = make_sku(price_fen=12800, stock=20)
    orders = []
    for _ in range(2):
        key = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}], address_id=address.pk)
        order, _ = order_create(customer=customer, order_key=key["order_key"])
        balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        orders.append(order)
    asked = make_api(customer).post(
        f"/api/v1/orders/{orders[1].order_no}/refund", {"reason": "不想要了"}, format="json"
    )
    assert asked.status_code == 202, asked.json()
    assert AfterSale.objects.filter(order=orders[1]).count() == 1
    return {"order": Order.objects.get(pk=orders[1].pk)}


def _login(browser, base_url, username: str):
    """One context and page for the login (its JavaScript errors collected in ``page.errors``)."""
    context = browser.new_context(viewport=WIDTHS["1366"], locale="zh-CN")
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(f"{base_url}/admin/login/?next=/admin/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/admin/", timeout=15000)
    return context, page


def _fits(page, width: int) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width + 1, f"{page.url} at {width}: {scroll} px wide"


def _shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _slug(path: str) -> str:
    """ "order-page", or the admin page's model ("aftersale"), "menu-add" for an add page."""
    if path == ORDER:
        return "order-page"
    parts = path.strip("/").split("/")
    return f"{parts[2]}-add" if parts[-1] == "add" else parts[2]


def _check(page, expect) -> None:
    if expect == "ok":
        return
    kind, texts = expect
    box = page.locator("#forbidden-roles" if kind == "denied" else "#role-hints")
    said = box.inner_text()
    for text in texts:
        if kind == "hints":
            text = who_may(text)
            assert "财务" in text  # a role is named, not only the action
        assert text in said, (page.url, said)


@pytest.mark.parametrize("login", list(ROLES))
def test_role_pages_fit_both_widths_and_name_who_may(browser, base_url, shop, login):
    role, pages = ROLES[login]
    context, page = _login(browser, base_url, login)
    try:
        for width, viewport in WIDTHS.items():
            page.set_viewport_size(viewport)
            for path, expect in pages:
                url = f"/admin/orders/order/{shop['order'].pk}/change/" if path == ORDER else path
                response = page.goto(f"{base_url}{url}")
                denied = isinstance(expect, tuple) and expect[0] == "denied"
                assert response.status == (403 if denied else 200), (login, url, response.status)
                _check(page, expect)
                _shot(page, f"roles-{login}-{_slug(path)}-{width}")
                _fits(page, viewport["width"])
        assert page.errors == [], page.errors
    finally:
        context.close()


def _name(page, path: str, text: str) -> None:
    page.fill(f"[data-field='{path}.name']", text)


def test_official_builds_a_menu_in_the_editor_at_390(browser, base_url, shop):
    from playwright.sync_api import expect  # installed whenever ``browser`` did not skip

    context, page = _login(browser, base_url, "official")
    try:
        page.set_viewport_size(WIDTHS["390"])
        page.goto(f"{base_url}{MENU}")
        page.fill("input[name=name]", "十二月菜单")
        _name(page, "0", "六个汉字六个")  # 18 bytes: over the top button's 16
        assert page.locator("[data-count-for='0.name']").inner_text() == "18/16 字节"
        assert "名称最多 16 字节" in page.locator("[data-error-for='0.name']").inner_text()
        page.fill("[data-field='0.key']", "shop")
        page.click(".me-add-top")
        page.select_option("[data-field='1.type']", "__sub")
        for _ in range(4):
            page.click("section[data-path='1'] .me-add")
        assert page.locator("section[data-path='1'] .me-add").is_disabled()  # 5 sub-buttons
        for j in range(5):
            _name(page, f"1.sub.{j}", f"子菜单{j}")
            page.fill(f"[data-field='1.sub.{j}.key']", f"k{j}")
        page.select_option("[data-field='1.sub.4.type']", "view")
        page.fill("[data-field='1.sub.4.url']", "https://example.com/help")
        page.click("[data-path='1.sub.4'] [aria-label=上移]")  # the view button becomes the 4th
        _name(page, "1", "更多")
        _shot(page, "roles-official-menu-editing-390")
        _fits(page, 390)
        page.click("button[name=_continue]")  # saved as it is: the server refuses the long name
        page.wait_for_load_state("networkidle")
        assert not Menu.objects.exists()
        assert (
            page.locator("[data-error-for='0.name']").inner_text()
            == "名称最多 16 字节（一个汉字 3 字节），现在 18 字节。"
        )
        _shot(page, "roles-official-menu-refused-390")
        _name(page, "0", "五个汉字五")
        page.click("button[name=_continue]")
        page.wait_for_load_state("networkidle")
        menu = Menu.objects.get()
        subs = [{"name": f"子菜单{j}", "type": "click", "key": f"k{j}"} for j in range(4)]
        subs.insert(3, {"name": "子菜单4", "type": "view", "url": "https://example.com/help"})
        assert menu.buttons == [
            {"name": "五个汉字五", "type": "click", "key": "shop"},
            {"name": "更多", "sub_button": subs},
        ]
        assert page.locator(".me-phone-button").all_inner_texts() == ["五个汉字五", "≡ 更多"]
        page.click(".me-phone-button >> nth=1")  # the preview opens the sub-menu
        assert page.locator(".me-phone-sub").all_inner_texts() == [s["name"] for s in subs]
        _shot(page, "roles-official-menu-saved-390")
        _fits(page, 390)

        page.goto(f"{base_url}{REPLY}")
        page.select_option("#id_reply_kind", "image")
        expect(page.locator("#id_text")).to_be_hidden()
        expect(page.locator("#id_articles")).to_be_hidden()
        expect(page.locator("#id_material")).to_be_attached()
        page.select_option("#id_reply_kind", "news")
        expect(page.locator("#id_articles")).to_be_visible()
        expect(page.locator("#id_text")).to_be_hidden()
        page.select_option("#id_match", "follow")
        expect(page.locator("#id_keyword")).to_be_hidden()
        _shot(page, "roles-official-reply-news-390")
        _fits(page, 390)
        assert page.errors == [], page.errors
    finally:
        context.close()
