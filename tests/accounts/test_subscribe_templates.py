"""Subscription templates staff manage: the public list, the senders using them, and a refused
message (43101) remembered per customer and kind instead of retried."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts import subscriptions
from apps.accounts.models import SubscribeRefusal, SubscribeTemplate
from apps.orders import followups
from apps.orders.models import FollowUp


@pytest.fixture
def templates(db):
    rows = [
        SubscribeTemplate(
            scene="order",
            kind="order_paid",
            template_id="tmpl-paid-1",
            fields={"order_no": "character_string7", "amount": "amount8", "paid_at": "time9"},
        ),
        SubscribeTemplate(scene="order", kind="order_shipped", template_id="tmpl-shipped-1", is_active=False),
        SubscribeTemplate(scene="consultation", kind="consultation_reminder", template_id="tmpl-remind-1"),
    ]
    return SubscribeTemplate.objects.bulk_create(rows)


def test_public_list_by_scene_is_a_bare_array_of_active_templates(make_api, templates):
    client = make_api()  # no token: public
    order = client.get("/api/v1/subscribe-templates?scene=order")
    assert order.status_code == 200
    assert order.json() == [{"scene": "order", "kind": "order_paid", "template_id": "tmpl-paid-1"}]
    consultation = client.get("/api/v1/subscribe-templates", {"scene": "consultation"}).json()
    # the chat message and the waitlist's message have no row: their built-in defaults (settings) are served
    assert [(t["kind"], t["template_id"]) for t in consultation] == [
        ("consultation_reminder", "tmpl-remind-1"),
        ("chat_message", "chat-message"),
        ("waitlist_open", "waitlist-open"),
    ]
    assert client.get("/api/v1/subscribe-templates?scene=nope").status_code == 400
    assert client.get("/api/v1/subscribe-templates", HTTP_AUTHORIZATION="Bearer unknown").status_code == 200


@pytest.fixture
def paid_order(api, make_sku, address, place_order, wechat, deliver):
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    deliver()
    return order


def test_paid_message_uses_the_staff_template_and_its_fields_map(paid_order, templates, customer, wechat):
    row = FollowUp.objects.get(kind="subscribe_message")
    assert followups.followup_execute(row.pk) == "done"
    [message] = wechat.control.messages()
    assert message["template_id"] == "tmpl-paid-1"
    assert message["data"] == {
        "character_string7": {"value": paid_order["order_no"]},
        "amount8": {"value": "128.00元"},
        "time9": message["data"]["time9"],
    }


def test_refused_message_is_remembered_and_not_sent_again(paid_order, templates, customer, wechat):
    wechat.state.upsert_user(customer.openid, refuse_messages=True)
    row = FollowUp.objects.get(kind="subscribe_message")
    assert followups.followup_execute(row.pk) == "done"  # not retried for ever
    refusal = SubscribeRefusal.objects.get()
    assert (refusal.customer_id, refusal.kind, refusal.template_id, refusal.times) == (
        customer.pk,
        "order_paid",
        "tmpl-paid-1",
        1,
    )
    # another message of that kind: skipped without asking WeChat
    calls = wechat.state.api_calls["cgi-bin/message/subscribe/send"]
    assert subscriptions.subscribe_send(customer=customer, kind="order_paid", values={}) == "skipped"
    assert wechat.state.api_calls["cgi-bin/message/subscribe/send"] == calls
    # after the quiet hours one send is tried again; a new refusal renews the same row
    SubscribeRefusal.objects.update(refused_at=timezone.now() - dt.timedelta(hours=25))
    assert subscriptions.subscribe_send(customer=customer, kind="order_paid", values={}) == "refused"
    assert SubscribeRefusal.objects.get().times == 2 and SubscribeRefusal.objects.count() == 1
    assert wechat.control.messages() == []


def test_switched_off_template_sends_nothing(paid_order, templates, customer, wechat):
    assert subscriptions.subscribe_send(customer=customer, kind="order_shipped", values={}) == "skipped"
    assert wechat.control.messages() == []


def test_order_paid_sms_reaches_the_provider(paid_order, wechat, settings):
    """With a real provider configured (the Tencent Cloud SMS sandbox), the "order paid" SMS
    goes out with its template and parameters."""
    import requests

    settings.SMS_BACKEND = "apps.accounts.sms.TencentSmsBackend"
    settings.SMS_TENCENT_ENDPOINT = f"{wechat.url}tencent-sms/"
    row = FollowUp.objects.get(kind="sms")
    assert followups.followup_execute(row.pk) == "done"
    [message] = requests.get(f"{wechat.url}sandbox/sms", timeout=5).json()["messages"]
    assert (message["phone"], message["template_id"], message["params"], message["session_context"]) == (
        "+8613800000000",
        "100002",
        [paid_order["order_no"], "128.00"],
        f"sms:{paid_order['order_no']}",
    )
