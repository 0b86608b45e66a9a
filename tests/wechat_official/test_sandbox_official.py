"""The sandbox as WeChat's server: its control call signs (and in safe mode encrypts) a message
or event, POSTs it to the shop's /wechat/official over HTTP and hands back the shop's reply."""

from __future__ import annotations

import pytest
import requests

from apps.wechat_official.models import Follower, ReplyRule

AES_KEY = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"


@pytest.fixture
def shop_url(live_server, settings):
    settings.WECHAT_OFFICIAL_TOKEN = "starmallofficialtoken"  # the sandbox's demo token
    settings.WECHAT_OFFICIAL_APPID = "wx5e2f7a9c1b3d4e60"
    return f"{live_server.url.replace('://localhost:', '://127.0.0.1:')}/wechat/official"


@pytest.mark.django_db(transaction=True)
def test_sandbox_verifies_and_sends_plain_and_encrypted_messages(wechat, shop_url, settings):
    ReplyRule.objects.create(name="关注", match="follow", reply_kind="text", text="欢迎")
    ReplyRule.objects.create(name="默认", match="default", reply_kind="text", text="收到")
    control = f"{wechat.url}sandbox/official"
    verified = requests.post(f"{control}/verify", json={"url": shop_url}, timeout=10).json()
    assert verified["status"] == 200 and verified["body"] == verified["echostr"]
    forged = requests.post(f"{control}/verify", json={"url": shop_url, "bad_signature": True}, timeout=10).json()
    assert forged["status"] == 403

    follow = requests.post(
        f"{control}/send",
        json={
            "url": shop_url,
            "openid": "oSandboxFollower0000000000001",
            "message": {"MsgType": "event", "Event": "subscribe", "EventKey": "qrscene_chX"},
        },
        timeout=10,
    ).json()
    assert follow["status"] == 200 and follow["reply"]["Content"] == "欢迎" and follow["elapsed_ms"] < 5000
    assert Follower.objects.get().scene == "chX"

    settings.WECHAT_OFFICIAL_AES_KEY, settings.WECHAT_OFFICIAL_MODE = AES_KEY, "safe"
    plain = requests.post(
        f"{control}/send", json={"url": shop_url, "message": {"MsgType": "text", "Content": "你好"}}, timeout=10
    ).json()
    assert plain["status"] == 403  # safe mode: a plaintext message is refused
    text = requests.post(
        f"{control}/send",
        json={
            "url": shop_url,
            "encrypt": True,
            "aes_key": AES_KEY,
            "openid": "oSandboxFollower0000000000001",
            "message": {"MsgType": "text", "Content": "你好"},
        },
        timeout=10,
    ).json()
    assert text["status"] == 200 and "<Encrypt>" in text["body"]
    assert (text["reply"]["Content"], text["reply"]["_appid"]) == ("收到", "wx5e2f7a9c1b3d4e60")
    recorded = requests.get(control, timeout=10).json()["exchanges"]
    assert [(e["encrypted"], e["status"]) for e in recorded] == [(False, 200), (False, 403), (True, 200)]
