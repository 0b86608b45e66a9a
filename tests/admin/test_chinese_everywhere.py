"""The back office is Chinese throughout: every name, label, choice, action,
permission and help text a staff member reads on the admin site, and every column and field
header of every page as rendered.

Each test collects all offenders and fails listing them, so one run shows the whole gap.
"""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from django.apps import apps as django_apps
from django.contrib import admin
from django.contrib.admin.utils import label_for_field
from django.core.management import call_command
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

# Text without Chinese characters that staff read as it is: codes and proper nouns, not words.
# Keep this short: anything else is a label to translate.
ALLOWED = {
    "ID",  # Django's automatic primary key; the same on every Chinese admin
    "SKU",  # the trade's own word for a stock-keeping unit (规格 is a different thing)
}


def is_chinese(text) -> bool:
    text = str(text or "").strip()
    return not text or bool(CJK.search(text)) or text in ALLOWED


def ours(model) -> bool:
    return model.__module__.startswith("apps.")


def admins():
    """(model, ModelAdmin instance) for every model on the site and every inline's model."""
    for model, model_admin in admin.site._registry.items():
        if not ours(model):
            continue  # Django's own (users, groups) come translated
        yield model, model_admin
        for inline in model_admin.inlines:
            yield inline.model, inline(model, admin.site)


@pytest.fixture
def superuser_request(django_user_model):
    user = django_user_model.objects.create_superuser("boss", password="pw-123456")
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def test_models_fields_choices_and_permissions_are_chinese():
    bad = []
    for model in django_apps.get_models():
        if not ours(model):
            continue
        meta = model._meta
        for name in ("verbose_name", "verbose_name_plural"):
            if not is_chinese(getattr(meta, name)):
                bad.append(f"{meta.label}.Meta.{name} = {getattr(meta, name)!r}")
        for codename, name in meta.permissions:
            if not is_chinese(name):
                bad.append(f"{meta.label} permission {codename}: {name!r}")
        for field in meta.get_fields():
            if not field.concrete or field.auto_created:
                continue
            if not is_chinese(field.verbose_name):
                bad.append(f"{meta.label}.{field.name}.verbose_name = {field.verbose_name!r}")
            if not is_chinese(field.help_text):
                bad.append(f"{meta.label}.{field.name}.help_text = {field.help_text!r}")
            for value, label in field.flatchoices if field.choices else ():
                if not is_chinese(label):
                    bad.append(f"{meta.label}.{field.name} choice {value!r}: {label!r}")
    for config in django_apps.get_app_configs():
        if config.name.startswith("apps.") and config.models_module and not is_chinese(config.verbose_name):
            bad.append(f"app {config.label}.verbose_name = {config.verbose_name!r}")
    assert not bad, "English labels:\n" + "\n".join(bad)


def test_permission_rows_read_chinese_in_the_role_editor():
    """The group editor lists Permission rows: Django's own four and the named ones, of every app."""
    from django.contrib.auth.models import Permission

    rows = list(Permission.objects.select_related("content_type"))
    assert len(rows) > 150
    bad = [f"{p.content_type.app_label}.{p.codename}: {p.name!r}" for p in rows if not is_chinese(p.name)]
    assert not bad, "English permission names:\n" + "\n".join(bad)
    assert Permission.objects.get(codename="view_order").name == "可以查看订单"
    assert Permission.objects.get(codename="ship_order").name == "可以给已支付的实物订单发货"


def test_admin_columns_actions_filters_forms_are_chinese(superuser_request):
    request = superuser_request
    bad = []
    for model, model_admin in admins():
        where = f"{type(model_admin).__name__} ({model._meta.label})"
        for name in ("verbose_name", "verbose_name_plural"):
            if not is_chinese(getattr(model_admin, name, None)):
                bad.append(f"{where}.{name} = {getattr(model_admin, name)!r}")
        if isinstance(model_admin, admin.ModelAdmin):
            for column in model_admin.get_list_display(request):
                if column == "action_checkbox":
                    continue
                label = label_for_field(column, model, model_admin)
                if not is_chinese(label):
                    bad.append(f"{where} column {column!r}: {label!r}")
            for _func, name, description in model_admin.get_actions(request).values():
                if not is_chinese(description):
                    bad.append(f"{where} action {name!r}: {description!r}")
            for list_filter in model_admin.get_list_filter(request):
                if isinstance(list_filter, (list, tuple)):
                    list_filter = list_filter[1]
                title = getattr(list_filter, "title", None) if isinstance(list_filter, type) else None
                if title is not None and not is_chinese(title):
                    bad.append(f"{where} filter title {title!r}")
        for title, _options in model_admin.get_fieldsets(request, None):
            if not is_chinese(title):
                bad.append(f"{where} fieldset {title!r}")
        if model_admin.has_add_permission(request, *(() if isinstance(model_admin, admin.ModelAdmin) else (None,))):
            form = (
                model_admin.get_form(request)
                if isinstance(model_admin, admin.ModelAdmin)
                else model_admin.get_formset(request).form
            )
            for name, field in form.base_fields.items():
                if not is_chinese(field.label) and name != "id":
                    bad.append(f"{where} form field {name!r} label {field.label!r}")
                if not is_chinese(field.help_text):
                    bad.append(f"{where} form field {name!r} help text {field.help_text!r}")
    assert not bad, "English in the admin:\n" + "\n".join(bad)


# --- rendered pages --------------------------------------------------------------------------


@pytest.fixture
def a_row_of_everything(shop_with_a_paid_order, make_api, place_order, consultation):
    """The demo shop plus at least one row of every model the admin shows: a paid goods order
    with a refund request and a shipment, a paid consultation with its chat, a review, a
    recharge, a coupon issue, a sign-in, a reconciliation run."""
    call_command("seed_demo", verbosity=0)  # the rest of the demo (coupons, freight, recharge packages, ...)
    from apps.accounts.models import Customer
    from apps.chat.models import ChatMessage, ChatNotice, ChatSession, ConsultationReminder
    from apps.marketing.models import CouponIssue, CouponTemplate, SignIn
    from apps.orders.models import AfterSale, Order, OrderLine, Shipment
    from apps.payments.models import InvalidNotificationDay, Recharge, RechargePackage, ReconciliationRun
    from apps.reviews.models import Review

    customer = Customer.objects.get(pk=1)
    api = make_api(customer)
    goods = Order.objects.get(order_no=shop_with_a_paid_order["order_no"])
    now = timezone.now()
    Shipment.objects.create(
        order=goods,
        carrier_code="shunfeng",
        carrier="顺丰速运",
        tracking_no="SF1234567890",
        shipped_by="staff:boss",
        shipped_at=now,
    )
    AfterSale.objects.filter(order=goods).update(return_carrier="顺丰速运", return_tracking_no="SF0987654321")

    booked = place_order(api, items=[(consultation.sku, 1)], slot=consultation.slots[0])
    api.post(f"/api/v1/orders/{booked['order_no']}/pay", {"method": "balance"}, format="json")
    talk = Order.objects.get(order_no=booked["order_no"])
    session, _ = ChatSession.objects.get_or_create(
        order=talk, defaults={"customer": customer, "teacher": consultation.teacher}
    )
    ChatMessage.objects.create(session=session, sender="customer", content_type=1, content="老师好")
    ChatNotice.objects.create(session=session, recipient="teacher", period=1)
    ConsultationReminder.objects.get_or_create(order=talk, hours=24, slot_start=talk.slot.start)

    line = OrderLine.objects.filter(order=goods).first()
    Review.objects.create(
        line=line,
        order=goods,
        product=line.product,
        customer=customer,
        rating=5,
        text="很好",
        images=["/media/uploads/a.png"],
    )
    package = RechargePackage.objects.first()
    Recharge.objects.create(
        recharge_no="R2026010112000012345678",
        customer=customer,
        package=package,
        pay_fen=package.pay_fen,
        bonus_fen=package.bonus_fen,
        expires_at=now,
    )
    CouponIssue.objects.create(template=CouponTemplate.objects.first(), customer=customer, created_by="boss")
    SignIn.objects.create(customer=customer, date=timezone.localdate(), streak=1, points=5)
    ReconciliationRun.objects.create(
        bill_date=dt.date(2026, 1, 1),
        status="differences",
        differences=[
            {
                "kind": "amount",
                "out_trade_no": goods.order_no,
                "out_refund_no": "",
                "wechat_fen": 100,
                "local_fen": 90,
                "wechat_status": "SUCCESS",
                "local_status": "paid",
            }
        ],
    )
    InvalidNotificationDay.objects.create(day=dt.date(2026, 1, 1), kind="payment", count=3)


# Not words: the theme's icons (a font: <span class="material-symbols-outlined">delete</span>)
# and a column's sort priority number.
NOT_TEXT = re.compile(r'<span class="[^"]*(?:material-symbols|sortpriority)[^"]*"[^>]*>.*?</span>', re.S)


def _cells(page: str, pattern: str) -> list[str]:
    """Texts (icons and tags stripped, whitespace squeezed) of the elements ``pattern`` matches."""
    out = []
    for inner in re.findall(pattern, NOT_TEXT.sub(" ", page), flags=re.S | re.I):
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", inner)).split())
        if text:
            out.append(text)
    return out


HEADERS = r"<thead\b[^>]*>(.*?)</thead>"  # column headers: changelists, tabular inlines, read-only tables
CELL = re.compile(r"<th\b[^>]*>(.*?)</th>", re.S | re.I)
LABELS = r"<label\b[^>]*>(.*?)</label>"  # change-form field labels
HEADINGS = r"<h2\b[^>]*>(.*?)</h2>"  # fieldsets and inlines


def test_rendered_pages_show_no_english_headers(client, django_user_model, a_row_of_everything):
    django_user_model.objects.create_superuser("boss", password="pw-123456")
    client.login(username="boss", password="pw-123456")
    bad, detail_pages, read = [], 0, 0
    for model in admin.site._registry:
        meta = model._meta
        urls = [reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")]
        first = model._default_manager.order_by("pk").first()
        if first is not None:
            urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk]))
            detail_pages += ours(model)
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, url
            page = response.content.decode()
            heads = "".join(
                f"<th>{cell}</th>"
                for head in re.findall(HEADERS, page, flags=re.S | re.I)
                for cell in CELL.findall(head)
            )
            for kind, source, pattern in (
                ("header", heads, r"<th>(.*?)</th>"),
                ("label", page, LABELS),
                ("heading", page, HEADINGS),
            ):
                for text in _cells(source, pattern):
                    read += 1
                    if not is_chinese(text):
                        bad.append(f"{url} {kind}: {text!r}")
    assert detail_pages >= 30  # a change page of (nearly) every model of ours was looked at
    assert read > 1000  # headers, labels and headings were found (the patterns match the theme's markup)
    assert not bad, "English on the rendered pages:\n" + "\n".join(sorted(set(bad)))
