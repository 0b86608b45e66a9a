"""The alerts in the back office: a read-only list in Shanghai time, filtered by kind, sending
and handling; "标记已处理" for holders of ``alerts.resolve_alert``; the dashboard's to-do count."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from admin_helpers import action, texts
from django.contrib.auth.models import Group
from django.urls import reverse

from apps.alerts.models import Alert
from apps.alerts.services import alert_raise

pytestmark = pytest.mark.django_db

LIST = "/admin/alerts/alert/"


@pytest.fixture
def alerts():
    """Two alerts raised at 2026-12-01 10:30 UTC (18:30 in Shanghai), one of them handled."""
    for no in ("SM1R1", "SM2R1"):
        alert_raise(
            key=f"refund:{no}:failed",
            kind=Alert.Kind.REFUND_FAILED,
            title=f"退款 {no} 失败",
            text=f"退款 {no} 尝试 3 次后失败。",
        )
    Alert.objects.update(created_at=dt.datetime(2026, 12, 1, 10, 30, tzinfo=ZoneInfo("UTC")))
    Alert.objects.filter(key="refund:SM2R1:failed").update(
        resolved_at=dt.datetime(2026, 12, 1, 11, 0, tzinfo=ZoneInfo("UTC")), resolved_by="staff:li"
    )
    return {a.key.split(":")[1]: a for a in Alert.objects.all()}


def test_finance_sees_open_alerts_in_shanghai_time_and_marks_them_handled(make_staff, alerts):
    finance = make_staff("alerts.view_alert", "alerts.resolve_alert")
    page = finance.get(f"{LIST}?handled=no").content.decode()
    body = page[page.find("result_list") :]
    assert "退款 SM1R1 失败" in body and "退款 SM2R1 失败" not in body
    assert "2026-12-01 18:30" in body  # Shanghai time
    assert "标记已处理" in page
    assert "退款 SM2R1 失败" in finance.get(f"{LIST}?handled=yes").content.decode()
    assert finance.get(f"{LIST}?kind__exact=refund_failed&status__exact=pending").status_code == 200

    response = action(finance, "alerts.alert", "mark_handled", [alerts["SM1R1"].pk, alerts["SM2R1"].pk])
    messages = texts(response)
    assert ("success", "退款 SM1R1 失败: 已标记为已处理") in messages
    assert ("warning", "退款 SM2R1 失败: 未改动：2026-12-01 19:00 已由 staff:li 处理") in messages
    assert ("warning", "标记已处理：成功 1 / 共 2") in messages
    handled = Alert.objects.get(pk=alerts["SM1R1"].pk)
    assert handled.resolved_by == f"staff:{finance.user.username}" and handled.resolved_at is not None
    assert Alert.objects.get(pk=alerts["SM2R1"].pk).resolved_by == "staff:li"  # the first handler stays


def test_view_only_alert_staff_can_read_but_not_mark(make_staff, alerts):
    service = make_staff("alerts.view_alert", "alerts.view_alertdelivery")
    page = service.get(LIST)
    assert page.status_code == 200 and b'name="action"' not in page.content
    detail = service.get(reverse("admin:alerts_alert_change", args=[alerts["SM1R1"].pk])).content.decode()
    assert "退款 SM1R1 尝试 3 次后失败。" in detail and 'name="_save"' not in detail
    action(service, "alerts.alert", "mark_handled", [alerts["SM1R1"].pk])
    assert Alert.objects.get(pk=alerts["SM1R1"].pk).resolved_at is None


def test_dashboard_counts_open_alerts_and_links_to_them(make_staff, alerts):
    staff = make_staff("orders.view_order", "alerts.view_alert")
    html = staff.get(reverse("admin:index")).content.decode()
    assert f'<a href="{LIST}?handled=no">未处理告警</a><span class="bo-badge" data-todo="未处理告警">1</span>' in html
    assert "退款 SM1R1 失败" in staff.get(f"{LIST}?handled=no").content.decode()
    without = make_staff("orders.view_order")
    assert "未处理告警" not in without.get(reverse("admin:index")).content.decode()


def test_roles_finance_marks_alerts_customer_service_reads_them():
    finance = {f"{p.content_type.app_label}.{p.codename}" for p in Group.objects.get(name="财务").permissions.all()}
    service = {f"{p.content_type.app_label}.{p.codename}" for p in Group.objects.get(name="客服").permissions.all()}
    assert {"alerts.view_alert", "alerts.view_alertdelivery", "alerts.resolve_alert"} <= finance
    assert {"alerts.view_alert", "alerts.view_alertdelivery"} <= service and "alerts.resolve_alert" not in service
