"""Chat fixtures: a paid consultation whose chat session is open, its customer and teacher."""

from __future__ import annotations

import pytest


@pytest.fixture
def teacher_customer(make_customer, consultation):
    """The WeChat customer the consultation's teacher signs in as."""
    person = make_customer(openid="oTeacherLiMingyuan0000000001")
    consultation.teacher.customer = person
    consultation.teacher.save(update_fields=["customer"])
    return person


@pytest.fixture
def pay_consultation(make_api, place_order, consultation, django_capture_on_commit_callbacks):
    """``pay_consultation(customer, slot=None)`` -> (order JSON, ChatSession): booked, paid from
    the balance, and the ``chat_open`` follow-up recorded by the paying transaction run."""
    from apps.chat.models import ChatSession
    from apps.orders.followups import followup_execute
    from apps.orders.models import FollowUp

    def pay(customer, slot=None):
        api = make_api(customer)
        order = place_order(api, items=[(consultation.sku, 1)], slot=slot or consultation.slots[0])
        with django_capture_on_commit_callbacks(execute=False):
            paid = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
        assert paid.status_code == 200, paid.json()
        opener = FollowUp.objects.get(order__order_no=order["order_no"], kind=FollowUp.Kind.CHAT_OPEN)
        assert followup_execute(opener.pk) == FollowUp.Status.DONE
        return order, ChatSession.objects.get(order__order_no=order["order_no"])

    return pay


@pytest.fixture
def chat(make_customer, teacher_customer, pay_consultation):
    """A paid consultation's open chat: ``.session``, ``.customer``, ``.teacher_customer``, ``.order``."""

    class Chat:
        pass

    c = Chat()
    c.customer = make_customer(balance_fen=100000)
    c.teacher_customer = teacher_customer
    c.order, c.session = pay_consultation(c.customer)
    return c


@pytest.fixture(autouse=True)
def _no_persistent_connections(monkeypatch):
    """Connections opened by the consumer's and the ASGI server's threads close after each use
    (CONN_MAX_AGE 0), so none is left open on the test database when it is dropped."""
    from django.db import connections

    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 0)


@pytest.fixture
def close_consultation(make_api, settings):
    """``close_consultation(chat, how)`` -> the order's status after ``how``: ``"refunding"`` (the
    customer asks for the full refund over the API; staff approve it, or the cancellation
    policy did), ``"refunded"`` (then the
    refund to the balance runs), ``"cancelled"`` (the order's status set as a cancel leaves it)."""
    from apps.orders.models import AfterSale, Order
    from apps.payments import refunds
    from apps.payments.models import Refund

    def close(chat, how: str) -> str:
        order_no = chat.order["order_no"]
        if how == "cancelled":
            Order.objects.filter(order_no=order_no).update(status="cancelled")
        else:
            settings.REFUND_AUTO_APPROVE_HOURS = 0  # staff decide
            asked = make_api(chat.customer).post(
                f"/api/v1/orders/{order_no}/refund", {"reason": "时间不合适"}, format="json"
            )
            assert asked.status_code in (200, 201, 202), asked.json()
            sale = AfterSale.objects.get(order__order_no=order_no)
            if sale.status == "requested":  # not a booked consultation: staff approve it
                assert refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff") is not None
            else:  # a booked consultation: the cancellation policy approved it at once
                assert sale.status == "approved"
            if how == "refunded":
                assert refunds.refund_execute(refund_id=Refund.objects.get(order__order_no=order_no).pk) == "success"
        return Order.objects.get(order_no=order_no).status

    return close


@pytest.fixture
def not_the_senders_media(chat, make_upload, settings):
    """``[(content_type, content, refusal body)]``: URLs under ``/media/`` that the chat's
    customer may not send (not their own upload of the message's kind), with the 400 expected."""
    from apps.files.services import media_url

    image = {
        "code": "invalid",
        "message": "图片消息只能发送你上传的图片。",
        "detail": {"content": ["必须是你通过上传接口上传的图片地址"]},
    }
    audio = {
        "code": "invalid",
        "message": "语音消息只能发送你上传的音频。",
        "detail": {"content": ["必须是你通过上传接口上传的音频地址"]},
    }
    theirs = make_upload(chat.teacher_customer)
    png, mp3 = make_upload(chat.customer), make_upload(chat.customer, "mp3")
    base = f"{settings.SITE_URL}/media/"
    return [
        (3, f"{base}uploads/2026/12/{'0' * 32}.png", image),  # well-formed, never stored
        (2, f"{base}uploads/2026/12/{'0' * 32}.mp3", audio),
        (3, media_url("demo/product-1.png"), image),  # a demo product picture
        (3, f"{base}%2e%2e/%2e%2e/admin/", image),
        (3, f"{base}uploads/../../admin/", image),
        (2, png, audio),  # a PNG sent as voice
        (3, mp3, image),  # an MP3 sent as a picture
        (3, theirs, image),  # the teacher's upload, sent by the customer
        (3, png.replace(settings.SITE_URL, ""), image),  # a relative URL
        (3, png + "?x=1", image),
    ]
