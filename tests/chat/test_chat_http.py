"""Chat over HTTP: opening, sessions with unread counts, history, sending, read marks, limits."""

from __future__ import annotations

import datetime as dt

import pytest
from django.conf import settings
from django.utils import timezone

from apps.chat.models import ChatMessage, ChatNotice, ChatSession
from apps.files.models import Upload
from apps.files.services import media_url, upload_name
from apps.orders.followups import followup_execute
from apps.orders.models import FollowUp, Order

pytestmark = pytest.mark.django_db


def _media(name: str) -> str:
    return f"{settings.SITE_URL}/media/uploads/{name}"


def test_chat_session_opened_once_by_the_paid_consultation(chat):
    assert chat.session.customer_id == chat.customer.pk
    assert chat.session.teacher.customer_id == chat.teacher_customer.pk
    again = FollowUp.objects.get(order__order_no=chat.order["order_no"], kind=FollowUp.Kind.CHAT_OPEN)
    FollowUp.objects.filter(pk=again.pk).update(status=FollowUp.Status.PENDING)
    assert followup_execute(again.pk) == FollowUp.Status.DONE
    assert ChatSession.objects.filter(order__order_no=chat.order["order_no"]).count() == 1


def test_chat_goods_order_opens_no_session(
    customer, api, make_sku, place_order, address, django_capture_on_commit_callbacks
):
    customer.balance_fen = 100000
    customer.save(update_fields=["balance_fen"])
    order = place_order(api, items=[(make_sku(), 1)], address=address)
    with django_capture_on_commit_callbacks(execute=False):
        assert (
            api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
        )
    assert FollowUp.objects.filter(order__order_no=order["order_no"]).count() == 3
    assert not FollowUp.objects.filter(kind=FollowUp.Kind.CHAT_OPEN).exists()
    assert ChatSession.objects.count() == 0


def test_chat_send_list_unread_and_read(chat, make_api, make_upload):
    customer_api, teacher_api = make_api(chat.customer), make_api(chat.teacher_customer)
    url = f"/api/v1/chat/sessions/{chat.session.pk}/messages"
    sent = [customer_api.post(url, {"content_type": 1, "content": f"老师好 {i}"}, format="json") for i in range(3)]
    assert [r.status_code for r in sent] == [201, 201, 201]
    picture = make_upload(chat.teacher_customer)
    image = teacher_api.post(url, {"content_type": 3, "content": picture}, format="json")
    assert image.status_code == 201 and image.json()["sender"] == "teacher"
    assert ChatMessage.objects.filter(session=chat.session).count() == 4

    mine = customer_api.get("/api/v1/chat/sessions").json()
    assert mine["count"] == 1
    row = mine["results"][0]
    assert (row["order_no"], row["unread"], row["side"]) == (chat.order["order_no"], 1, "customer")
    assert row["last_message"]["content"] == picture
    theirs = teacher_api.get("/api/v1/chat/sessions").json()["results"][0]
    assert (theirs["unread"], theirs["side"], theirs["customer"]["id"]) == (3, "teacher", chat.customer.pk)

    history = teacher_api.get(url).json()
    assert [m["content_type"] for m in history["results"]] == [3, 1, 1, 1]  # newest first
    older = teacher_api.get(url, {"before": history["results"][1]["id"]}).json()
    assert [m["content"] for m in older["results"]] == ["老师好 1", "老师好 0"]

    read = teacher_api.post(
        f"/api/v1/chat/sessions/{chat.session.pk}/read", {"up_to": history["results"][2]["id"]}, format="json"
    )
    assert read.status_code == 204
    assert teacher_api.get("/api/v1/chat/sessions").json()["results"][0]["unread"] == 1
    teacher_api.post(f"/api/v1/chat/sessions/{chat.session.pk}/read", {"up_to": 1}, format="json")  # never backwards
    assert teacher_api.get("/api/v1/chat/sessions").json()["results"][0]["unread"] == 1


@pytest.mark.parametrize(
    "body, field",
    [
        ({"content_type": 1, "content": "字" * 1001}, "content"),
        ({"content_type": 1, "content": "   "}, "content"),
        ({"content_type": 3, "content": "https://evil.example.com/media/a.jpg"}, "content"),
        ({"content_type": 2, "content": "/media/uploads/a.mp3", "duration": 5}, "content"),
        ({"content_type": 4, "content": "hi"}, "content_type"),
    ],
)
def test_chat_invalid_messages_are_400_and_not_stored(chat, make_api, body, field):
    response = make_api(chat.customer).post(f"/api/v1/chat/sessions/{chat.session.pk}/messages", body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and field in response.json()["detail"]
    assert ChatMessage.objects.count() == 0


def test_chat_voice_duration_is_the_one_read_from_the_file(chat, make_api, make_upload):
    api = make_api(chat.customer)
    url = f"/api/v1/chat/sessions/{chat.session.pk}/messages"
    voices = [make_upload(chat.customer, ext) for ext in ("mp3", "aac", "m4a")]  # 2.06-2.11 s each
    claimed = api.post(url, {"content_type": 2, "content": voices[0], "duration": 12}, format="json")
    assert claimed.status_code == 201 and claimed.json()["duration"] == 2  # not the client's 12
    for voice in voices[1:]:
        unclaimed = api.post(url, {"content_type": 2, "content": voice}, format="json")
        assert unclaimed.status_code == 201 and unclaimed.json()["duration"] == 2
    assert list(ChatMessage.objects.values_list("duration", flat=True)) == [2, 2, 2]


def test_chat_voice_longer_than_60_seconds_is_refused(chat, make_api, make_upload):
    voice = make_upload(chat.customer, "mp3")
    Upload.objects.filter(name=upload_name(voice)).update(duration_ms=60_600)  # as if 60.6 s were uploaded
    response = make_api(chat.customer).post(
        f"/api/v1/chat/sessions/{chat.session.pk}/messages",
        {"content_type": 2, "content": voice, "duration": 60},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "code": "invalid",
        "message": "语音最长 60 秒。",
        "detail": {"content": ["语音时长必须是 1 到 60 秒"]},
    }
    assert ChatMessage.objects.count() == 0


def test_chat_media_must_be_the_senders_own_upload_of_the_right_kind(chat, make_api, not_the_senders_media):
    api = make_api(chat.customer)
    url = f"/api/v1/chat/sessions/{chat.session.pk}/messages"
    for content_type, content, refusal in not_the_senders_media:
        response = api.post(url, {"content_type": content_type, "content": content, "duration": 5}, format="json")
        assert response.status_code == 400, content
        assert response.json() == refusal, content
    assert ChatMessage.objects.count() == 0 and ChatNotice.objects.count() == 0
    # the teacher may send their own picture, which the customer could not
    theirs = Upload.objects.get(uploader_id=chat.teacher_customer.pk)
    sent = make_api(chat.teacher_customer).post(
        url, {"content_type": 3, "content": media_url(theirs.name)}, format="json"
    )
    assert sent.status_code == 201 and ChatMessage.objects.count() == 1


@pytest.mark.parametrize("how", ["refunding", "refunded", "cancelled"])
def test_chat_of_a_refunded_or_cancelled_consultation_takes_no_messages(chat, make_api, close_consultation, how):
    customer_api, teacher_api = make_api(chat.customer), make_api(chat.teacher_customer)
    url = f"/api/v1/chat/sessions/{chat.session.pk}/messages"
    assert customer_api.post(url, {"content_type": 1, "content": "老师好"}, format="json").status_code == 201
    ChatNotice.objects.all().delete()
    assert close_consultation(chat, how) == how
    for api, text in ((customer_api, "还能聊吗"), (teacher_api, "在的")):
        response = api.post(url, {"content_type": 1, "content": text}, format="json")
        assert response.status_code == 409
        assert response.json() == {
            "code": "invalid_state",
            "message": "该咨询已取消或退款，会话已关闭，不能再发送消息。",
            "detail": {"status": how},
        }
    assert list(ChatMessage.objects.values_list("content", flat=True)) == ["老师好"]
    assert ChatNotice.objects.count() == 0  # no "new message" notice for a refused message
    # the history stays readable, read marks still move, and the list says it is closed
    assert [m["content"] for m in teacher_api.get(url).json()["results"]] == ["老师好"]
    first = ChatMessage.objects.get().pk
    assert (
        teacher_api.post(f"/api/v1/chat/sessions/{chat.session.pk}/read", {"up_to": first}, format="json").status_code
        == 204
    )
    sessions = teacher_api.get("/api/v1/chat/sessions").json()["results"]
    assert [(s["id"], s["closed"], s["unread"]) for s in sessions] == [(chat.session.pk, True, 0)]


def test_chat_of_a_paid_or_completed_consultation_is_open(chat, make_api):
    url = f"/api/v1/chat/sessions/{chat.session.pk}/messages"
    assert make_api(chat.customer).get("/api/v1/chat/sessions").json()["results"][0]["closed"] is False
    Order.objects.filter(order_no=chat.order["order_no"]).update(status="completed")
    assert (
        make_api(chat.teacher_customer).post(url, {"content_type": 1, "content": "感谢"}, format="json").status_code
        == 201
    )


def test_chat_someone_elses_session_is_403(chat, make_customer, make_api):
    stranger = make_api(make_customer())
    url = f"/api/v1/chat/sessions/{chat.session.pk}/messages"
    assert stranger.get(url).status_code == 403
    response = stranger.post(url, {"content_type": 1, "content": "hi"}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "forbidden"
    assert stranger.get("/api/v1/chat/sessions").json()["count"] == 0
    assert make_api(chat.customer).get("/api/v1/chat/sessions/999999/messages").status_code == 404
    assert ChatMessage.objects.count() == 0


def test_chat_rate_limit_per_user(chat, make_api, settings, monkeypatch):
    import time

    settings.CHAT_MESSAGES_PER_MINUTE = 3
    now = time.time()
    monkeypatch.setattr("apps.chat.services.time.time", lambda: now)  # all five in one clock minute
    api = make_api(chat.customer)
    url = f"/api/v1/chat/sessions/{chat.session.pk}/messages"
    answers = [api.post(url, {"content_type": 1, "content": str(i)}, format="json") for i in range(5)]
    assert [a.status_code for a in answers] == [201, 201, 201, 429, 429]
    assert answers[3].json()["code"] == "throttled"
    assert ChatMessage.objects.count() == 3
    # the limit is the user's, not the session's: the teacher may still answer
    assert (
        make_api(chat.teacher_customer).post(url, {"content_type": 1, "content": "好"}, format="json").status_code
        == 201
    )


def test_chat_offline_side_gets_one_notice_per_quiet_period(chat, make_api, django_capture_on_commit_callbacks, wechat):
    from apps.chat import services

    wechat.state.upsert_user(chat.customer.openid)
    api = make_api(chat.teacher_customer)
    url = f"/api/v1/chat/sessions/{chat.session.pk}/messages"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        for i in range(4):
            assert api.post(url, {"content_type": 1, "content": f"在吗 {i}"}, format="json").status_code == 201
    notices = list(ChatNotice.objects.all())
    assert [(n.recipient, n.session_id) for n in notices] == [("customer", chat.session.pk)]
    assert len(callbacks) == 1  # one push for four messages
    assert services.notice_send(notice_id=notices[0].pk) == ChatNotice.Status.SENT
    assert services.notice_send(notice_id=notices[0].pk) == ChatNotice.Status.SENT  # not sent twice
    sent = [m for m in wechat.state.messages if m.touser == chat.customer.openid]
    assert len(sent) == 1 and sent[0].template_id == settings.WECHAT_SUBSCRIBE_TEMPLATE_CHAT
    assert sent[0].data["character_string3"]["value"] == chat.order["order_no"]


def test_chat_online_side_gets_no_notice(chat, make_api):
    from apps.chat import presence

    presence.presence_enter(session_id=chat.session.pk, side="customer", channel_name="specific.test!1")
    api = make_api(chat.teacher_customer)
    assert (
        api.post(
            f"/api/v1/chat/sessions/{chat.session.pk}/messages", {"content_type": 1, "content": "在"}, format="json"
        ).status_code
        == 201
    )
    assert ChatNotice.objects.count() == 0
    presence.presence_leave(session_id=chat.session.pk, side="customer", channel_name="specific.test!1")
    assert (
        api.post(
            f"/api/v1/chat/sessions/{chat.session.pk}/messages", {"content_type": 1, "content": "在吗"}, format="json"
        ).status_code
        == 201
    )
    assert list(ChatNotice.objects.values_list("recipient", flat=True)) == ["customer"]


@pytest.mark.django_db(transaction=True)  # real commits: what a killed worker leaves is what committed
def test_chat_notice_is_recorded_sent_when_the_worker_dies_right_after_wechat_answered(
    chat, make_api, wechat, die_after_answer
):
    from apps.chat import services

    wechat.state.upsert_user(chat.customer.openid)
    url = f"/api/v1/chat/sessions/{chat.session.pk}/messages"
    assert (
        make_api(chat.teacher_customer).post(url, {"content_type": 1, "content": "在吗"}, format="json").status_code
        == 201
    )
    notice = ChatNotice.objects.get()
    with die_after_answer(lambda: len(wechat.state.messages) > 0) as death:
        services.notice_send(notice_id=notice.pk)
    assert death.killed
    later = timezone.now() + dt.timedelta(minutes=2)
    assert services.notices_resend(now=later) == 0  # beat's resend leaves it alone
    assert services.notice_send(notice_id=notice.pk) == ChatNotice.Status.SENT  # its task, redelivered
    assert [m.touser for m in wechat.state.messages] == [chat.customer.openid]
    assert ChatNotice.objects.values_list("status", "attempts").get() == (ChatNotice.Status.SENT, 1)
