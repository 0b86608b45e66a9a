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
