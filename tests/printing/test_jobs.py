"""Print jobs: sent once (a retried task prints nothing more), retried on failure, 重打 a new
job, printing on payment through the follow-up outbox, waybills that ship the order."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.orders import followups
from apps.orders.models import FollowUp, Order, OrderStatus, Shipment
from apps.printing import providers, services
from apps.printing.models import Printer, PrintJob
from apps.printing.tasks import print_job_send_task
from starmall.errors import InvalidState

pytestmark = pytest.mark.django_db


def _ticket(order, printer, django_capture_on_commit_callbacks, queued=None):
    with django_capture_on_commit_callbacks(execute=True):
        job, made = services.print_job_request(order=order, kind="ticket", printer=printer, actor="staff:ops")
    return job, made


def test_ticket_job_prints_once_however_often_the_task_runs(
    paid_goods, printer, printing, django_capture_on_commit_callbacks, queued
):
    job, made = _ticket(paid_goods, printer, django_capture_on_commit_callbacks)
    assert made and queued("default")[-1] == "apps.printing.tasks.print_job_send_task"  # pushed after commit
    again, made_again = _ticket(paid_goods, printer, django_capture_on_commit_callbacks)
    assert (again.pk, made_again) == (job.pk, False)  # a double click: the same job
    assert print_job_send_task.run(job.pk) == "done"
    assert print_job_send_task.run(job.pk) == "done"  # the task redelivered
    prints = printing.prints()
    assert len(prints) == 1
    assert prints[0]["sn"] == "SB-001" and prints[0]["times"] == 2  # the printer's copies
    assert prints[0]["content"] == job.content and paid_goods.order_no in prints[0]["content"]
    job.refresh_from_db()
    assert (job.status, job.attempts, PrintJob.objects.count()) == ("done", 1, 1)
    assert prints[0]["orderid"] in job.answer and job.note.startswith("已打印")


def test_reprint_is_a_new_job_and_a_second_paper(paid_goods, printer, printing, django_capture_on_commit_callbacks):
    job, _ = _ticket(paid_goods, printer, django_capture_on_commit_callbacks)
    services.print_job_send(job.pk)
    first = services.print_job_reprint(job=job, actor="staff:ops")
    second = services.print_job_reprint(job=job, actor="staff:ops")
    assert first.key == f"{job.key}:r1" and second.key == f"{job.key}:r2"
    for made in (first, second):
        assert services.print_job_send(made.pk) == "done"
        assert services.print_job_send(made.pk) == "done"
    assert len(printing.prints()) == 3


def test_failed_attempts_wait_then_fail_and_retry_sends_the_same_job(paid_goods, printer, printing, settings):
    job, _ = services.print_job_request(order=paid_goods, kind="ticket", printer=printer, actor="staff:ops")
    printing.state()["down"] = True  # the provider answers 503
    now = timezone.now()
    assert services.print_job_send(job.pk, now=now) == "pending"
    assert services.print_job_send(job.pk, now=now) == "pending"  # leased for its backoff: not tried
    job.refresh_from_db()
    assert job.attempts == 1 and job.locked_until == now + dt.timedelta(seconds=30)
    for attempt in range(2, PrintJob.MAX_ATTEMPTS + 1):
        now += dt.timedelta(minutes=10)
        assert services.print_jobs_redispatch(now=now) == 1  # the sweep pushes it again
        assert services.print_job_send(job.pk, now=now) == ("failed" if attempt == PrintJob.MAX_ATTEMPTS else "pending")
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("failed", PrintJob.MAX_ATTEMPTS) and "HTTPError" in job.error
    assert printing.prints() == []
    printing.state()["down"] = False
    assert services.print_job_retry(job_id=job.pk) is True
    assert services.print_job_retry(job_id=job.pk) is False  # not failed any more
    assert services.print_job_send(job.pk) == "done"
    assert len(printing.prints()) == 1 and PrintJob.objects.count() == 1


def test_a_refusal_fails_at_once(paid_goods, printing, settings):
    printer = Printer.objects.create(provider="feie", name="真机", sn="920000001")
    settings.PRINTER_FEIE_URL = printing.url + "Api/Open/"  # the real protocol, a wrong UKEY
    settings.PRINTER_FEIE_USER, settings.PRINTER_FEIE_USER_KEY = providers.SANDBOX_FEIE_USER, "wrong"
    job, _ = services.print_job_request(order=paid_goods, kind="ticket", printer=printer, actor="staff:ops")
    assert services.print_job_send(job.pk) == "failed"
    job.refresh_from_db()
    assert job.attempts == 1 and "签名错误" in job.error and '"ret": -2' in job.answer
    settings.PRINTER_FEIE_USER_KEY = providers.SANDBOX_FEIE_UKEY  # the 飞鹅 implementation, right key
    assert services.print_job_retry(job_id=job.pk) and services.print_job_send(job.pk) == "done"
    assert [p["sn"] for p in printing.prints()] == ["920000001"]


def test_unpaid_order_gets_no_ticket(buyer, make_sku, place_order, printer):
    order = place_order(buyer.api, items=[(make_sku(), 1)])
    with pytest.raises(InvalidState):
        services.print_job_request(
            order=Order.objects.get(order_no=order["order_no"]), kind="ticket", printer=printer, actor="staff:ops"
        )
    assert PrintJob.objects.count() == 0


def test_print_on_payment_through_the_wechat_notification(
    buyer, make_sku, place_order, wechat, deliver, printer, printing, django_capture_on_commit_callbacks
):
    Printer.objects.create(provider="sandbox", name="后厨", sn="SB-002", print_on_payment=False)
    order = place_order(buyer.api, items=[(make_sku(price_fen=12800), 1)])
    buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    deliver()  # WeChat's payment notification, through the shop's notify view
    row = FollowUp.objects.get(kind="print_ticket", order__order_no=order["order_no"])
    assert row.key == f"print_ticket:{order['order_no']}"
    with django_capture_on_commit_callbacks(execute=True):
        assert followups.followup_execute(row.pk) == "done"
        assert followups.followup_execute(row.pk) == "done"  # the follow-up redelivered
    job = PrintJob.objects.get()  # the print-on-payment printer only
    assert (job.printer, job.requested_by, job.key) == (
        printer,
        "system:paid",
        f"ticket:{order['order_no']}:{printer.pk}",
    )
    assert services.print_job_send(job.pk) == "done" and services.print_job_send(job.pk) == "done"
    assert [p["sn"] for p in printing.prints()] == ["SB-001"]
    assert "128.00" in printing.prints()[0]["content"]


def test_no_print_on_payment_printer_no_followup(paid_goods):
    assert not FollowUp.objects.filter(kind="print_ticket").exists()


def test_the_cached_print_on_payment_setting_follows_every_printer_edit(
    paid, django_capture_on_commit_callbacks, django_assert_num_queries
):
    from apps.printing import selectors

    def paid_with_ticket() -> bool:
        order, _ = paid(price_fen=5000, quantity=1)
        return FollowUp.objects.filter(kind="print_ticket", order__order_no=order["order_no"]).exists()

    assert not paid_with_ticket()  # no printer: the answer "no" is cached
    with django_assert_num_queries(0):
        assert selectors.prints_on_payment() is False  # from memory
    with django_capture_on_commit_callbacks(execute=True):
        printer = Printer.objects.create(provider="sandbox", name="前台", sn="SB-009", print_on_payment=True)
    assert paid_with_ticket()  # the save dropped the cached "no"
    with django_capture_on_commit_callbacks(execute=True):
        printer.active = False
        printer.save()
    assert not paid_with_ticket()
    with django_capture_on_commit_callbacks(execute=True):
        printer.active = True
        printer.save()
    assert paid_with_ticket()
    with django_capture_on_commit_callbacks(execute=True):
        printer.delete()
    assert not paid_with_ticket()


def test_waybill_ships_the_order_with_its_tracking_number(paid_goods, printing, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job, made = services.print_job_request(order=paid_goods, kind="label", actor="staff:ops")
    assert made and services.print_job_request(order=paid_goods, kind="label", actor="staff:ops")[0] == job
    assert services.print_job_send(job.pk) == "done"
    assert services.print_job_send(job.pk) == "done"
    waybills = printing.waybills()
    assert len(waybills) == 1
    sent = waybills[0]["param"]
    assert sent["recMan"] == {"name": "张三", "mobile": "13800001234", "printAddr": "浙江省杭州市西湖区文三路100号"}
    assert sent["kuaidicom"] == "zhongtong" and sent["count"] == 2 and sent["remark"] == paid_goods.order_no
    job.refresh_from_db()
    order = Order.objects.get(pk=paid_goods.pk)
    shipment = Shipment.objects.get(order=order)
    assert order.status == OrderStatus.SHIPPED
    assert (shipment.carrier_code, shipment.tracking_no) == ("zhongtong", waybills[0]["kuaidinum"])
    assert shipment.shipped_by == "staff:ops"  # the manual shipping's path, its actor
    assert (job.tracking_no, job.note) == (shipment.tracking_no, "已发货")
    assert job.label_url.endswith(waybills[0]["taskId"])
    assert FollowUp.objects.filter(order=order, kind="shipped_message").count() == 1
    with pytest.raises(InvalidState):  # shipped: no second waybill
        services.print_job_request(order=order, kind="label", actor="staff:ops")


def test_waybill_for_an_order_refunded_meanwhile_is_not_ordered(paid_goods, printing):
    job, _ = services.print_job_request(order=paid_goods, kind="label", actor="staff:ops")
    Order.objects.filter(pk=paid_goods.pk).update(status=OrderStatus.REFUNDED)
    assert services.print_job_send(job.pk) == "failed"
    assert printing.waybills() == []
    assert "待发货" in PrintJob.objects.get(pk=job.pk).error


def test_waybill_refused_by_a_wrong_key_fails_without_shipping(paid_goods, printing, settings):
    settings.WAYBILL_PROVIDER = "apps.printing.providers.Kuaidi100WaybillProvider"
    settings.WAYBILL_URL = printing.url + "label/order"
    settings.WAYBILL_KEY, settings.WAYBILL_SECRET = providers.SANDBOX_WAYBILL_KEY, "wrong"
    job, _ = services.print_job_request(order=paid_goods, kind="label", actor="staff:ops")
    assert services.print_job_send(job.pk) == "failed"
    assert "验证签名失败" in PrintJob.objects.get(pk=job.pk).error
    assert Order.objects.get(pk=paid_goods.pk).status == OrderStatus.PAID
    settings.WAYBILL_SECRET = providers.SANDBOX_WAYBILL_SECRET  # the Kuaidi100 implementation, right secret
    assert services.print_job_retry(job_id=job.pk) and services.print_job_send(job.pk) == "done"
    assert Order.objects.get(pk=paid_goods.pk).status == OrderStatus.SHIPPED


def test_the_demo_printer_prints_a_wechat_paid_order(
    buyer, make_sku, place_order, wechat, deliver, printing, django_capture_on_commit_callbacks
):
    from django.core.management import call_command

    call_command("seed_printing")
    call_command("seed_printing")  # runshop runs it at every start: one printer
    demo = Printer.objects.get()
    assert (demo.provider, demo.print_on_payment, demo.active) == ("sandbox", True, True)
    order = place_order(buyer.api, items=[(make_sku(price_fen=990), 3)])
    buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    deliver()
    with django_capture_on_commit_callbacks(execute=True):
        followups.followup_execute(FollowUp.objects.get(kind="print_ticket").pk)
    assert services.print_job_send(PrintJob.objects.get().pk) == "done"
    [paper] = printing.prints()
    assert paper["sn"] == "SANDBOX-58MM-001" and "9.90 x3  29.70" in paper["content"]


def test_a_job_whose_worker_died_is_sent_after_its_lease(paid_goods, printer, printing):
    job, _ = services.print_job_request(order=paid_goods, kind="ticket", printer=printer, actor="staff:ops")
    now = timezone.now()
    PrintJob.objects.filter(pk=job.pk).update(status="sending", attempts=1, locked_until=now + dt.timedelta(minutes=2))
    assert services.print_job_send(job.pk, now=now) == "sending"  # another worker holds it
    assert printing.prints() == []
    later = now + dt.timedelta(minutes=3)
    assert services.print_jobs_redispatch(now=later) == 1
    assert services.print_job_send(job.pk, now=later) == "done"
    assert len(printing.prints()) == 1 and PrintJob.objects.get(pk=job.pk).attempts == 2
