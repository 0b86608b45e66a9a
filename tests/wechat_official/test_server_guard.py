"""``/wechat/official`` against forgery, replay, downgrade and overflow (API.md, "Corrections"):
a signed call whose timestamp is more than 300 s from the clock or whose nonce was seen is
refused 403 and changes nothing (GET and POST, every mode); ``WECHAT_OFFICIAL_MODE`` decides
between plaintext and encrypted messages; a message with a field out of range is answered
``success`` and stored nowhere (PostgreSQL's varchar columns included); Redis down is a 503."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.distribution.models import Channel
from apps.wechat_official.models import Follower, InboundEvent
from tests.test_service_unavailable import assert_503, redis_down

SUBSCRIBE = {"MsgType": "event", "Event": "subscribe", "EventKey": "qrscene_chA"}
OPENID = "oFollower000000000000000001"


@pytest.fixture
def clock(monkeypatch):
    """The shop's clock stopped at a whole second: Unix seconds."""
    frozen = timezone.now().replace(microsecond=0)
    monkeypatch.setattr(timezone, "now", lambda: frozen)
    return int(frozen.timestamp())


@pytest.fixture
def channel(db):
    return Channel.objects.create(code="chA", name="地推A")


def shop_state(channel) -> tuple[int, int, int]:
    """(followers, stored messages and events, the channel's visits)."""
    channel.refresh_from_db()
    return Follower.objects.count(), InboundEvent.objects.count(), channel.visits


def assert_refused(response):
    assert response.status_code == 403, response.content
    assert response.json()["code"] == "forbidden"


def test_a_replayed_query_string_is_refused_whatever_the_body(official, channel):
    first = official.send(SUBSCRIBE)
    assert (first.status_code, shop_state(channel)) == (200, (1, 1, 1))
    assert_refused(official.send(SUBSCRIBE, params=first.params))  # the same call again
    other = {**SUBSCRIBE, "CreateTime": int(first.params["timestamp"]) + 7}
    assert_refused(official.send(other, openid="oAttacker00000000000000000001", params=first.params))
    # the same nonce signed again with another fresh timestamp: still seen within the window
    resigned_at = int(first.params["timestamp"]) - 1
    assert_refused(
        official.send(other, openid="oAttacker00000000000000000001", nonce=first.params["nonce"], timestamp=resigned_at)
    )
    assert shop_state(channel) == (1, 1, 1)
    assert list(Follower.objects.values_list("openid", flat=True)) == [OPENID]


@pytest.mark.parametrize("skew, accepted", [(-301, False), (301, False), (-299, True), (299, True), (0, True)])
def test_a_post_more_than_300_s_from_the_clock_is_refused(official, channel, clock, skew, accepted):
    answer = official.send({**SUBSCRIBE, "CreateTime": clock}, timestamp=clock + skew)
    if accepted:
        assert answer.status_code == 200
        assert shop_state(channel) == (1, 1, 1)
    else:
        assert_refused(answer)
        assert shop_state(channel) == (0, 0, 0)


@pytest.mark.parametrize("timestamp", ["1600000000", "", "abc", "-1", "1e9", "９９９"])
def test_an_old_or_unreadable_timestamp_is_refused(official, channel, timestamp):
    """The attack: a URL signed in 2020, replayed with a new subscribe event."""
    assert_refused(official.send(SUBSCRIBE, timestamp=timestamp))
    assert_refused(official.verify("5837397520665436492", timestamp=timestamp))
    assert shop_state(channel) == (0, 0, 0)


@pytest.mark.parametrize("skew, accepted", [(-301, False), (301, False), (-299, True), (299, True)])
def test_the_echostr_check_is_refused_outside_the_window(official, clock, skew, accepted):
    answer = official.verify("5837397520665436492", timestamp=clock + skew)
    if accepted:
        assert (answer.status_code, answer.content) == (200, b"5837397520665436492")
    else:
        assert_refused(answer)


def test_a_replayed_echostr_check_is_refused(official, db):
    first = official.verify("5837397520665436492", nonce="1234567890")
    assert (first.status_code, first.content) == (200, b"5837397520665436492")
    assert_refused(official.verify("5837397520665436492", nonce="1234567890"))
    assert_refused(official.verify("42", nonce="1234567890"))
    # a nonce used by a GET is used for a POST too
    assert_refused(official.send({"MsgType": "text", "Content": "hi", "MsgId": 1}, nonce="1234567890"))
    assert InboundEvent.objects.count() == 0


def test_safe_mode_refuses_plaintext_and_a_refusal_does_not_use_up_the_nonce(official, channel, aes):
    plain = official.send(SUBSCRIBE, nonce="5550000001")
    assert_refused(plain)
    assert plain.json()["message"] == "消息加密方式与公众号设置不符。"
    assert_refused(official.send(SUBSCRIBE, encrypt=True, bad_msg=True, nonce="5550000001"))
    assert shop_state(channel) == (0, 0, 0)
    encrypted = official.send(SUBSCRIBE, encrypt=True, nonce="5550000001")
    assert encrypted.status_code == 200
    assert shop_state(channel) == (1, 1, 1)
    assert InboundEvent.objects.get().encrypted is True
    assert_refused(official.send(SUBSCRIBE, encrypt=True, params=encrypted.params))  # replayed
    assert shop_state(channel) == (1, 1, 1)


def test_plaintext_mode_refuses_encrypted_messages_even_with_a_key(official, settings, channel):
    from tests.wechat_official.conftest import AES_KEY

    settings.WECHAT_OFFICIAL_AES_KEY, settings.WECHAT_OFFICIAL_MODE = AES_KEY, "plaintext"
    assert_refused(official.send(SUBSCRIBE, encrypt=True))
    assert shop_state(channel) == (0, 0, 0)
    assert official.send(SUBSCRIBE).status_code == 200
    assert shop_state(channel) == (1, 1, 1)


def _over(n: int) -> str:
    return "x" * n


OUT_OF_RANGE = {
    "CreateTime twenty nines": ({**SUBSCRIBE, "CreateTime": "9" * 20}, OPENID),
    "MsgId 500 nines": ({"MsgType": "text", "Content": "hi", "MsgId": "9" * 500}, OPENID),
    "MsgId 2**64": ({"MsgType": "text", "Content": "hi", "MsgId": str(2**64)}, OPENID),
    "MsgId negative": ({"MsgType": "text", "Content": "hi", "MsgId": "-1"}, OPENID),
    "MsgId zero": ({"MsgType": "text", "Content": "hi", "MsgId": "0"}, OPENID),
    "MsgId not a number": ({"MsgType": "text", "Content": "hi", "MsgId": "12a"}, OPENID),
    "MsgId full-width digits": ({"MsgType": "text", "Content": "hi", "MsgId": "１２３"}, OPENID),
    "CreateTime not a number": ({**SUBSCRIBE, "CreateTime": "abc"}, OPENID),
    "CreateTime negative": ({**SUBSCRIBE, "CreateTime": "-1"}, OPENID),
    "CreateTime exponent": ({**SUBSCRIBE, "CreateTime": "1e9"}, OPENID),
    "CreateTime empty": ({**SUBSCRIBE, "CreateTime": ""}, OPENID),
    "CreateTime missing": ({**SUBSCRIBE, "CreateTime": None}, OPENID),
    "CreateTime zero": ({**SUBSCRIBE, "CreateTime": 0}, OPENID),
    "CreateTime 2020": ({**SUBSCRIBE, "CreateTime": 1600000000}, OPENID),
    "CreateTime two days ahead": ({**SUBSCRIBE, "CreateTime": "ahead"}, OPENID),
    "FromUserName over 64": (SUBSCRIBE, "o" + _over(64)),
    "MsgType over 20": ({"MsgType": _over(21), "MsgId": 5}, OPENID),
    "Event over 32": ({"MsgType": "event", "Event": _over(33)}, OPENID),
    "EventKey over 128": ({"MsgType": "event", "Event": "CLICK", "EventKey": _over(129)}, OPENID),
    "scene over 64": ({"MsgType": "event", "Event": "subscribe", "EventKey": "qrscene_" + _over(65)}, OPENID),
    "SCAN scene over 64": ({"MsgType": "event", "Event": "SCAN", "EventKey": _over(65), "Ticket": "t"}, OPENID),
    "Content over 2000": ({"MsgType": "text", "Content": _over(2001), "MsgId": 6}, OPENID),
    "Ticket over 2000": ({**SUBSCRIBE, "Ticket": _over(2001)}, OPENID),
    "ToUserName over 2000": ({**SUBSCRIBE, "ToUserName": _over(2001)}, OPENID),
}


@pytest.mark.parametrize("case", list(OUT_OF_RANGE))
@pytest.mark.parametrize("encrypt", [False, True], ids=["plaintext", "encrypted"])
def test_a_field_out_of_range_is_answered_success_and_stored_nowhere(official, channel, compatible, case, encrypt):
    fields, openid = OUT_OF_RANGE[case]
    if fields.get("CreateTime") == "ahead":
        fields = {**fields, "CreateTime": int(timezone.now().timestamp()) + 2 * 86400}
    answer = official.send(fields, openid=openid, encrypt=encrypt)
    assert (answer.status_code, answer.content) == (200, b"success")
    assert shop_state(channel) == (0, 0, 0)


def test_fields_at_their_column_lengths_are_stored_once(official, db):
    """The limits are the columns' (64, 128, 2000 characters...), not less; an EventKey too
    long for the dedupe key's 160 characters is kept apart from another with the same start."""
    openid = "o" + "y" * 63
    key = "k" * 120
    for event_key in (key + "A" * 8, key + "B" * 8, key + "A" * 8):  # the third: WeChat's repeat
        answer = official.send({"MsgType": "event", "Event": "CLICK", "EventKey": event_key}, openid=openid)
        assert answer.status_code == 200
    rows = InboundEvent.objects.order_by("id")
    assert [(r.openid, r.event_key) for r in rows] == [(openid, key + "A" * 8), (openid, key + "B" * 8)]
    assert all(len(r.dedupe_key) <= 160 for r in rows)
    assert official.send({"MsgType": "text", "Content": "好" * 2000, "MsgId": 2**64 - 1}).status_code == 200
    scene = official.send({"MsgType": "event", "Event": "subscribe", "EventKey": "qrscene_" + "s" * 64}, openid=openid)
    assert scene.status_code == 200
    assert InboundEvent.objects.get(dedupe_key=f"msg:{2**64 - 1}").content == "好" * 2000
    assert Follower.objects.get(openid=openid).scene == "s" * 64


def test_redis_down_is_503_and_stores_nothing(official, channel):
    with redis_down():
        assert_503(official.send(SUBSCRIBE))
        assert_503(official.verify("5837397520665436492"))
    assert shop_state(channel) == (0, 0, 0)
    assert official.send(SUBSCRIBE).status_code == 200  # Redis back: WeChat's retry is applied
    assert shop_state(channel) == (1, 1, 1)


def test_a_call_that_failed_inside_the_shop_may_come_again_with_its_nonce(official, channel, monkeypatch):
    """The nonce of a call answered 503 (nothing kept) is forgotten: WeChat's retry of the same
    call is applied once; a third delivery is refused."""
    from apps.wechat_official import server
    from starmall.errors import DatabaseBusy

    real = server.inbound_record

    def busy(*args, **kwargs):
        raise DatabaseBusy()

    monkeypatch.setattr(server, "inbound_record", busy)
    first = official.send(SUBSCRIBE)
    assert (first.status_code, first.json()["code"]) == (503, "service_unavailable")
    assert shop_state(channel) == (0, 0, 0)
    monkeypatch.setattr(server, "inbound_record", real)
    assert official.send(SUBSCRIBE, params=first.params).status_code == 200
    assert shop_state(channel) == (1, 1, 1)
    assert_refused(official.send(SUBSCRIBE, params=first.params))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_racing_calls_with_one_nonce_apply_exactly_one(settings, race):
    """Eight threads (each its own database connection) send one signed query string with
    eight different messages at the same moment: the nonce memory (Redis SET NX) lets exactly
    one through."""
    from apps.wechat_official.server import official_request
    from tests.wechat_official.conftest import now, sign

    settings.WECHAT_OFFICIAL_TOKEN = "testtoken"
    timestamp, nonce = str(now()), "7770000001"
    params = {"signature": sign("testtoken", timestamp, nonce), "timestamp": timestamp, "nonce": nonce}

    def send(i: int):
        body = (
            f"<xml><ToUserName>gh</ToUserName><FromUserName>oRacer{i:022d}</FromUserName>"
            f"<CreateTime>{timestamp}</CreateTime><MsgType>text</MsgType><Content>hi</Content>"
            f"<MsgId>{9000 + i}</MsgId></xml>"
        )
        return official_request(method="POST", params=params, body=body.encode()).status

    statuses = race(send, 8)
    assert sorted(statuses) == [200] + [403] * 7, statuses
    assert InboundEvent.objects.count() == 1
