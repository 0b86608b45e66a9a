"""The back office's 打印小票 and 电子面单: the order page's buttons, the list's bulk actions, the
print job list's 重试 / 重打 — for 运营 and 客服 as BACKOFFICE.md says, refused to the others."""

import pytest
from django.urls import reverse

from apps.orders.models import Order, OrderStatus
from apps.printing import services
from apps.printing.models import PrintJob

pytestmark = pytest.mark.django_db


def _messages(response) -> list[str]:
    return [m.message for m in response.context["messages"]]


def _action(client, model: str, name: str, pks):
    return client.post(
        reverse(f"admin:{model}_changelist"), {"action": name, "_selected_action": [str(pk) for pk in pks]}, follow=True
    )


def test_ops_prints_a_ticket_and_orders_a_waybill_from_the_order_page(
    role_client, paid_goods, printer, printing, django_capture_on_commit_callbacks
):
    ops = role_client("运营")
    page = ops.get(reverse("admin:orders_order_change", args=[paid_goods.pk]))
    assert b'id="print-ticket-form"' in page.content and b'id="waybill-form"' in page.content
    with django_capture_on_commit_callbacks(execute=True):
        done = ops.post(reverse("admin:orders_order_print_ticket", args=[paid_goods.pk]), follow=True)
    assert _messages(done) == [f"{paid_goods.order_no}：前台：已提交打印"]
    again = ops.post(reverse("admin:orders_order_print_ticket", args=[paid_goods.pk]), follow=True)
    assert "已打印过" in _messages(again)[0] and PrintJob.objects.count() == 1
    ops.post(reverse("admin:orders_order_waybill", args=[paid_goods.pk]))
    label = PrintJob.objects.get(kind="label")
    assert label.requested_by == f"staff:{ops.user.username}"
    for job in PrintJob.objects.order_by("id"):
        assert services.print_job_send(job.pk) == "done"
    assert len(printing.prints()) == 1 and len(printing.waybills()) == 1
    assert Order.objects.get(pk=paid_goods.pk).status == OrderStatus.SHIPPED
    page = ops.get(reverse("admin:orders_order_change", args=[paid_goods.pk]))
    assert b'id="print-jobs"' in page.content and label.tracking_no.encode() in page.content
    assert b'id="waybill-form"' not in page.content  # shipped: no second waybill


def test_service_prints_tickets_but_may_not_ship_by_waybill(role_client, paid_goods, printer, printing):
    service = role_client("客服")
    page = service.get(reverse("admin:orders_order_change", args=[paid_goods.pk]))
    assert b'id="print-ticket-form"' in page.content and b'id="waybill-form"' not in page.content
    assert service.post(reverse("admin:orders_order_waybill", args=[paid_goods.pk])).status_code == 403
    refused = _action(service, "orders_order", "order_waybills", [paid_goods.pk])
    assert PrintJob.objects.filter(kind="label").count() == 0
    assert refused.status_code in (200, 403)
    _action(service, "orders_order", "print_tickets", [paid_goods.pk])
    assert PrintJob.objects.filter(kind="ticket").count() == 1


@pytest.mark.parametrize("role", ["财务", "老师"])
def test_other_roles_are_refused(role_client, paid_goods, printer, role):
    staff = role_client(role)
    for name in ("orders_order_print_ticket", "orders_order_waybill"):
        assert staff.post(reverse(f"admin:{name}", args=[paid_goods.pk])).status_code == 403
    _action(staff, "orders_order", "print_tickets", [paid_goods.pk])
    _action(staff, "orders_order", "order_waybills", [paid_goods.pk])
    assert PrintJob.objects.count() == 0
    with pytest.raises(services.PermissionDenied):  # the service itself, reached another way
        services.print_job_request(order=paid_goods, kind="ticket", printer=printer, actor="x", user=staff.user)


def test_view_only_staff_sees_no_buttons_and_is_refused(client, django_user_model, paid_goods, printer):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("viewer", password="pw-123456", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_order", "view_printjob"]))
    client.force_login(user)
    page = client.get(reverse("admin:orders_order_change", args=[paid_goods.pk]))
    assert page.status_code == 200 and b'id="print-ticket-form"' not in page.content
    assert client.post(reverse("admin:orders_order_print_ticket", args=[paid_goods.pk])).status_code == 403
    assert PrintJob.objects.count() == 0


def test_bulk_actions_one_outcome_per_order(role_client, paid, printer, printing):
    ops = role_client("运营")
    orders = [Order.objects.get(order_no=paid()[0]["order_no"]) for _ in range(2)]
    done = _action(ops, "orders_order", "print_tickets", [o.pk for o in orders])
    assert sum("已提交打印" in text for text in _messages(done)) == 2
    done = _action(ops, "orders_order", "order_waybills", [o.pk for o in orders])
    assert sum("电子面单已提交" in text for text in _messages(done)) == 2
    assert PrintJob.objects.filter(kind="label").count() == 2 and PrintJob.objects.filter(kind="ticket").count() == 2


def test_job_list_retry_and_reprint(role_client, paid_goods, printer, printing):
    ops = role_client("运营")
    job, _ = services.print_job_request(order=paid_goods, kind="ticket", printer=printer, actor="staff:ops")
    PrintJob.objects.filter(pk=job.pk).update(status="failed", attempts=5, error="HTTPError")
    listing = ops.get(reverse("admin:printing_printjob_changelist"))
    assert listing.status_code == 200 and paid_goods.order_no.encode() in listing.content
    _action(ops, "printing_printjob", "retry", [job.pk])
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("pending", 0)
    assert services.print_job_send(job.pk) == "done"
    _action(ops, "printing_printjob", "reprint", [job.pk])
    reprint = PrintJob.objects.exclude(pk=job.pk).get()
    assert reprint.key == f"{job.key}:r1" and services.print_job_send(reprint.pk) == "done"
    assert len(printing.prints()) == 2
    finance = role_client("财务")
    assert finance.get(reverse("admin:printing_printjob_changelist")).status_code == 403
    _action(finance, "printing_printjob", "reprint", [job.pk])
    assert PrintJob.objects.count() == 2


def test_printer_admin_for_ops(role_client):
    ops = role_client("运营")
    response = ops.post(
        reverse("admin:printing_printer_add"),
        {"name": "仓库", "provider": "feie", "sn": "920000002", "key": "abc", "copies": "2", "active": "on"},
    )
    assert response.status_code == 302
    from apps.printing.models import Printer

    assert Printer.objects.get(sn="920000002").copies == 2
    assert role_client("客服").get(reverse("admin:printing_printer_add")).status_code == 403
