"""``/wechat/official``: signed echo, bad signatures, plaintext and safe-mode (AES) messages and
events, reply rules, follower states, channel scenes, WeChat's repeats."""

from __future__ import annotations

import time

import pytest

from apps.wechat_official.models import Follower, InboundEvent, Material, ReplyRule


def test_signed_get_echoes_echostr(official):
    answer = official.verify("5837397520665436492")
    assert (answer.status_code, answer.content) == (200, b"5837397520665436492")


def test_bad_signature_is_403_for_get_and_post(official):
    assert official.verify("1", bad=True).status_code == 403
    assert official.send({"MsgType": "text", "Content": "hi"}, bad=True).status_code == 403
    assert InboundEvent.objects.count() == 0


def test_unsigned_request_is_403(client, db):
    assert client.get("/wechat/official", {"echostr": "1"}).status_code == 403
    assert client.post("/wechat/official", data="<xml/>", content_type="text/xml").status_code == 403


@pytest.fixture
def rules(db):
    image = Material.objects.create(kind="image", title="海报", media_id="MEDIA_IMG_1")
    return {
        "exact": ReplyRule.objects.create(
            name="价格", match="keyword_exact", keyword="价格", reply_kind="text", text="价格请看小程序"
        ),
        "contains": ReplyRule.objects.create(
            name="老师",
            match="keyword_contains",
            keyword="老师",
            reply_kind="news",
            articles=[{"title": "老师介绍", "description": "d", "image": "http://x/a.png", "url": "http://x/a"}],
        ),
        "image": ReplyRule.objects.create(
            name="海报", match="keyword_exact", keyword="海报", reply_kind="image", material=image
        ),
        "follow": ReplyRule.objects.create(name="关注", match="follow", reply_kind="text", text="欢迎关注星商城"),
        "scan": ReplyRule.objects.create(
            name="渠道A", match="scan", scene="chA", reply_kind="text", text="渠道A欢迎你"
        ),
        "default": ReplyRule.objects.create(name="默认", match="default", reply_kind="text", text="收到"),
    }


def test_text_reply_rules_exact_contains_default_and_image(official, rules):
    exact = official.reply(official.send({"MsgType": "text", "Content": "价格", "MsgId": 1001}))
    assert (exact["MsgType"], exact["Content"], exact["ToUserName"]) == (
        "text",
        "价格请看小程序",
        "oFollower000000000000000001",
    )
    news = official.reply(official.send({"MsgType": "text", "Content": "想找王老师", "MsgId": 1002}))
    assert news["MsgType"] == "news" and news["ArticleCount"] == "1"
    assert news["Articles"]["item"]["Title"] == "老师介绍"
    image = official.reply(official.send({"MsgType": "text", "Content": "海报", "MsgId": 1003}))
    assert (image["MsgType"], image["Image"]["MediaId"]) == ("image", "MEDIA_IMG_1")
    other = official.reply(official.send({"MsgType": "voice", "MediaId": "m", "Format": "amr", "MsgId": 1004}))
    assert other["Content"] == "收到"
    assert InboundEvent.objects.count() == 4
    assert InboundEvent.objects.get(dedupe_key="msg:1001").reply_rule == rules["exact"]


def test_no_rule_answers_success(official, db):
    answer = official.send({"MsgType": "text", "Content": "hi", "MsgId": 7})
    assert (answer.status_code, answer.content) == (200, b"success")


def test_follow_unfollow_and_channel_scan_events_move_the_follower(official, rules):
    t = int(time.time())
    follow = official.send({"MsgType": "event", "Event": "subscribe", "EventKey": "qrscene_chA", "CreateTime": t})
    assert official.reply(follow)["Content"] == "渠道A欢迎你"
    follower = Follower.objects.get()
    assert (follower.subscribed, follower.scene) == (True, "chA")
    row = InboundEvent.objects.get()
    assert (row.event, row.scene, row.channel_counted) == ("subscribe", "chA", False)  # no channel chA here
    # WeChat repeats the same event (no answer in time): nothing changes twice
    official.send({"MsgType": "event", "Event": "subscribe", "EventKey": "qrscene_chA", "CreateTime": t})
    assert InboundEvent.objects.count() == 1
    unfollow = official.send({"MsgType": "event", "Event": "unsubscribe", "CreateTime": t + 5})
    assert unfollow.content == b"success"
    follower.refresh_from_db()
    assert (follower.subscribed, follower.unsubscribed_at is not None) == (False, True)
    # a late, older subscribe does not undo the newer unfollow
    official.send({"MsgType": "event", "Event": "subscribe", "CreateTime": t + 1})
    follower.refresh_from_db()
    assert follower.subscribed is False
    # following again later: subscribed, the plain follow rule answers
    again = official.send({"MsgType": "event", "Event": "subscribe", "CreateTime": t + 10})
    assert official.reply(again)["Content"] == "欢迎关注星商城"
    follower.refresh_from_db()
    assert follower.subscribed is True
    scan = official.send({"MsgType": "event", "Event": "SCAN", "EventKey": "chB", "Ticket": "x", "CreateTime": t + 11})
    assert scan.content == b"success"  # no rule for chB nor for any code
    assert InboundEvent.objects.get(event="scan").scene == "chB"
    assert list(Follower.objects.values_list("subscribed", flat=True)) == [True]


def test_menu_click_uses_keyword_rules(official, rules):
    click = official.send({"MsgType": "event", "Event": "CLICK", "EventKey": "价格"})
    assert official.reply(click)["Content"] == "价格请看小程序"


def test_safe_mode_message_is_decrypted_and_the_reply_encrypted(official, rules, aes):
    answer = official.send({"MsgType": "text", "Content": "价格", "MsgId": 2001}, encrypt=True)
    assert answer.status_code == 200 and b"<Encrypt>" in answer.content and "价格".encode() not in answer.content
    assert official.reply(answer)["Content"] == "价格请看小程序"
    assert InboundEvent.objects.get().encrypted is True


def test_safe_mode_bad_msg_signature_is_403(official, rules, aes):
    assert (
        official.send({"MsgType": "text", "Content": "价格", "MsgId": 2002}, encrypt=True, bad_msg=True).status_code
        == 403
    )
    assert InboundEvent.objects.count() == 0


def test_compatible_mode_accepts_plaintext_and_encrypted_messages(official, rules, compatible):
    answer = official.send({"MsgType": "text", "Content": "价格", "MsgId": 2003})
    assert official.reply(answer)["Content"] == "价格请看小程序"
    encrypted = official.send({"MsgType": "text", "Content": "价格", "MsgId": 2004}, encrypt=True)
    assert official.reply(encrypted)["Content"] == "价格请看小程序"
    assert list(InboundEvent.objects.order_by("id").values_list("dedupe_key", "encrypted")) == [
        ("msg:2003", False),
        ("msg:2004", True),
    ]


def test_safe_mode_without_an_aes_key_is_refused(official, rules):
    # a message claiming safe mode while the shop has no key cannot be read: refused, not 500
    assert official.send({"MsgType": "text", "Content": "价格"}, encrypt=True).status_code == 403


def test_malformed_body_is_400(official, client, db):
    def post(body):
        query = "&".join(f"{k}={v}" for k, v in official.params().items())  # each call signed afresh
        return client.post(f"/wechat/official?{query}", data=body, content_type="text/xml")

    assert post("not xml").status_code == 400
    dtd = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><xml><MsgType>text</MsgType></xml>'
    assert post(dtd).status_code == 400
    assert post("<xml><MsgType>text</MsgType><FromUserName><a>1</a></FromUserName></xml>").status_code == 400
    assert InboundEvent.objects.count() == 0


def test_channel_scans_count_one_visit_per_event_even_when_wechat_redelivers(official, rules):
    """A follow by a channel's QR code (``qrscene_<code>``) and a scan by a follower (``<code>``,
    or the mini-program's ``c=<code>`` form) each count one visit to distribution's channel;
    WeChat's repeat of the same event (same openid, CreateTime, event) counts nothing more."""
    from apps.distribution.models import Channel

    channel = Channel.objects.create(code="chA", name="地推A")
    other = Channel.objects.create(code="chB", name="地推B")
    t = int(time.time())
    follow = {"MsgType": "event", "Event": "subscribe", "EventKey": "qrscene_chA", "CreateTime": t}
    assert official.reply(official.send(follow))["Content"] == "渠道A欢迎你"
    assert official.reply(official.send(follow))["Content"] == "渠道A欢迎你"  # redelivered: same reply
    channel.refresh_from_db()
    assert (channel.visits, channel.registrations) == (1, 0)
    assert InboundEvent.objects.get().channel_counted is True

    scan = {"MsgType": "event", "Event": "SCAN", "EventKey": "chA", "Ticket": "t", "CreateTime": t + 60}
    for _ in range(3):
        official.send(scan)
    scan_c = {"MsgType": "event", "Event": "SCAN", "EventKey": "c=chA", "Ticket": "t", "CreateTime": t + 120}
    official.send(scan_c)
    official.send(scan_c)
    channel.refresh_from_db()
    other.refresh_from_db()
    assert (channel.visits, other.visits) == (3, 0)
    assert list(InboundEvent.objects.order_by("id").values_list("scene", "channel_counted")) == [
        ("chA", True),
        ("chA", True),
        ("c=chA", True),
    ]

    unknown = {"MsgType": "event", "Event": "SCAN", "EventKey": "nosuch", "Ticket": "t", "CreateTime": t + 180}
    assert official.send(unknown).status_code == 200
    assert InboundEvent.objects.get(scene="nosuch").channel_counted is False
    assert sum(Channel.objects.values_list("visits", flat=True)) == 3
