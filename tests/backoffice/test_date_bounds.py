"""Dates at the ends of Python's calendar (9999-12-31, 0001-01-01) and garbage in the back office
get a Chinese form error or a 400 page, never a 500 (OverflowError); the API answers such dates
in its JSON error format."""

import pytest

from apps.backoffice.dates import OUT_OF_RANGE, UNREADABLE

pytestmark = pytest.mark.django_db
EXPORT = "/admin/backoffice/export/"


@pytest.fixture
def finance(role_client):
    return role_client("财务")


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
@pytest.mark.parametrize(
    ("kind", "start", "end"),
    [
        ("orders", "2026-01-01", "9999-12-31"),
        ("orders", "0001-01-01", "0001-01-02"),
        ("payments", "9999-12-30", "9999-12-31"),
        ("refunds", "0001-01-01", "2026-01-01"),
        ("reconciliation", "9999-12-31", "9999-12-31"),
    ],
)
def test_export_out_of_range_dates_are_a_form_error(finance, fmt, kind, start, end):
    response = finance.get(EXPORT, {"kind": kind, "start": start, "end": end, "fmt": fmt})
    assert response.status_code == 200 and not response.streaming  # the form again, no file
    assert response.headers["Content-Type"].startswith("text/html")
    assert OUT_OF_RANGE in response.content.decode()


def test_export_garbage_dates_are_a_form_error(finance):
    response = finance.get(EXPORT, {"kind": "orders", "start": "garbage", "end": "2026-13-40", "fmt": "xlsx"})
    assert response.status_code == 200 and not response.streaming
    assert response.content.decode().count("输入一个有效的日期。") == 2


def test_export_at_the_calendar_ends_still_works(finance):
    response = finance.get(EXPORT, {"kind": "orders", "start": "2100-12-31", "end": "2100-12-31", "fmt": "csv"})
    assert response.status_code == 200 and response.streaming
    assert len(b"".join(response.streaming_content).decode("utf-8-sig").splitlines()) == 1  # the header


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("/admin/backoffice/week/?start=9999-12-31", OUT_OF_RANGE),
        ("/admin/backoffice/week/?start=9999-12-25", OUT_OF_RANGE),
        ("/admin/backoffice/week/?start=0001-01-01", OUT_OF_RANGE),
        ("/admin/backoffice/week/?start=garbage", UNREADABLE),
        ("/admin/backoffice/almanac/?month=9999-12", OUT_OF_RANGE),
        ("/admin/backoffice/almanac/?month=0001-01", OUT_OF_RANGE),
        ("/admin/backoffice/almanac/?month=garbage", UNREADABLE),
    ],
)
def test_calendars_refuse_dates_outside_the_shop_calendar_with_a_400_page(boss, url, message):
    response = boss.get(url)
    assert response.status_code == 400
    html = response.content.decode()
    assert f'<p class="errornote" id="date-refused">{message}</p>' in html
    assert f'href="{url.split("?")[0]}"' in html  # the way back


def test_calendars_within_range_still_render(boss):
    assert boss.get("/admin/backoffice/week/", {"start": "2100-12-31"}).status_code == 200
    assert boss.get("/admin/backoffice/almanac/", {"month": "1901-01"}).status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/admin/orders/order/?created_at__year=9999&created_at__month=12&created_at__day=31",
        "/admin/orders/order/?created_at__year=9999",
        "/admin/orders/order/?created_at__year=1&created_at__month=1&created_at__day=1",
        "/admin/orders/order/?created_at__gte=0001-01-01",
        "/admin/orders/order/?created_at__lt=0001-01-01+00:00:00",
        "/admin/orders/order/?created_at__date=9999-12-31",
        "/admin/almanac/almanacday/?date__year=9999&date__month=12&date__day=31",
        "/admin/payments/reconciliationrun/?bill_date__year=9999&bill_date__month=12",
        "/admin/appointments/slot/?start__gte=0001-01-01",
        "/admin/marketing/flashsale/?starts_at__year=9999",
        "/admin/payments/invalidnotificationday/?day__year=9999&day__month=12",
        "/admin/payments/payment/?order__created_at__range=0001-01-01,2026-01-01",
    ],
)
def test_change_list_date_filters_outside_the_range_are_a_400_page(boss, url):
    response = boss.get(url)
    assert response.status_code == 400
    assert OUT_OF_RANGE in response.content.decode()


def test_change_list_date_filters_within_the_range_still_filter(boss, customer):
    from apps.orders.models import Order

    assert (
        boss.get("/admin/orders/order/?created_at__year=2100&created_at__month=12&created_at__day=31").status_code
        == 200
    )
    assert boss.get("/admin/orders/order/?created_at__gte=1901-01-01").status_code == 200
    assert boss.get("/admin/orders/order/?created_at__month=12").status_code == 200  # not a date: untouched
    assert Order.objects.count() == 0
    # Django's own answer to a lookup it cannot read stays as it was (a redirect to ?e=1).
    assert boss.get("/admin/orders/order/?created_at__year=abc").status_code == 302


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/almanac/days/9999-12-31",
        "/api/v1/almanac/days/0001-01-01",
        "/api/v1/almanac/days/garbage",
        "/api/v1/almanac/months/9999-12",
        "/api/v1/almanac/months/0001-01",
        "/api/v1/almanac/months/garbage",
        "/api/v1/almanac/search?activity=%E6%90%AC%E5%AE%B6&start=9999-12-31&days=30",
        "/api/v1/almanac/search?activity=%E6%90%AC%E5%AE%B6&start=0001-01-01",
        "/api/v1/almanac/search?activity=%E6%90%AC%E5%AE%B6&start=garbage",
        "/api/v1/teachers/1/slots?from=9999-12-31",
        "/api/v1/teachers/1/slots?from=0001-01-01&to=0001-01-02",
        "/api/v1/teachers/1/slots?from=garbage",
    ],
)
def test_api_date_parameters_at_the_ends_are_json_errors(client, consultation, url):
    from django.core.management import call_command

    call_command("load_almanac", start="2026-12-01", end="2026-12-31", no_progress=True, verbosity=0)
    response = client.get(url.replace("/teachers/1/", f"/teachers/{consultation.teacher.pk}/"))
    assert response.status_code in (400, 404)
    body = response.json()
    assert set(body) == {"code", "message", "detail"} and body["code"] in ("invalid", "not_found")
    assert any("\u4e00" <= ch <= "\u9fff" for ch in body["message"])  # Chinese
