"""Fixtures acting as WeChat's server towards ``/wechat/official``: plain and safe-mode messages
built with wechatpy's own crypto, as WeChat builds them."""

from __future__ import annotations

import hashlib
import secrets

import pytest
from django.utils import timezone
from wechatpy.crypto import WeChatCrypto

AES_KEY = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"  # 43 characters


def sign(token: str, *parts: str) -> str:
    return hashlib.sha1("".join(sorted([token, *parts])).encode()).hexdigest()


def now() -> int:
    """The shop's clock (``timezone.now``, which a test may freeze) in Unix seconds."""
    return int(timezone.now().timestamp())


@pytest.fixture
def official(client, settings, db):
    """``official.send(fields, encrypt=False, openid=...)`` -> the response; ``.reply(resp)``
    -> the reply XML's fields (decrypted in safe mode); ``.verify(echostr)``. Each call is
    signed afresh (the clock's timestamp, a random nonce) unless ``timestamp`` / ``nonce`` are
    given; ``params=`` sends an earlier call's query string (``response.params``) again."""
    import xmltodict

    settings.WECHAT_OFFICIAL_TOKEN = "testtoken"
    settings.WECHAT_OFFICIAL_APPID = "wx5e2f7a9c1b3d4e60"

    class Official:
        token = "testtoken"

        def params(self, bad=False, *, timestamp=None, nonce=None):
            timestamp = str(now() if timestamp is None else timestamp)
            nonce = f"{secrets.randbelow(10**10):010d}" if nonce is None else nonce
            signature = "0" * 40 if bad else sign(self.token, timestamp, nonce)
            return {"signature": signature, "timestamp": timestamp, "nonce": nonce}

        def xml(self, fields, openid="oFollower000000000000000001"):
            parts = {
                "ToUserName": "gh_starmall",
                "FromUserName": openid,
                "CreateTime": fields.pop("CreateTime", now()),
                **fields,
            }
            parts = {k: v for k, v in parts.items() if v is not None}  # None: the element left out
            body = "".join(
                f"<{k}>{v}</{k}>" if isinstance(v, int) else f"<{k}><![CDATA[{v}]]></{k}>" for k, v in parts.items()
            )
            return f"<xml>{body}</xml>"

        def send(
            self,
            fields,
            *,
            encrypt=False,
            openid="oFollower000000000000000001",
            bad=False,
            bad_msg=False,
            timestamp=None,
            nonce=None,
            params=None,
        ):
            params = dict(params) if params else self.params(bad, timestamp=timestamp, nonce=nonce)
            plain = self.xml(dict(fields), openid)
            if encrypt:
                crypto = WeChatCrypto(self.token, AES_KEY, settings.WECHAT_OFFICIAL_APPID)
                envelope = xmltodict.parse(crypto.encrypt_message(plain, params["nonce"], params["timestamp"]))["xml"]
                params |= {"encrypt_type": "aes", "msg_signature": "0" * 40 if bad_msg else envelope["MsgSignature"]}
                body = f"<xml><ToUserName><![CDATA[gh_starmall]]></ToUserName><Encrypt><![CDATA[{envelope['Encrypt']}]]></Encrypt></xml>"
            else:
                body = plain
            query = "&".join(f"{k}={v}" for k, v in params.items())
            response = client.post(f"/wechat/official?{query}", data=body, content_type="text/xml")
            response.params = params
            return response

        def reply(self, response):
            text = response.content.decode()
            if text == "success":
                return None
            root = xmltodict.parse(text)["xml"]
            if "Encrypt" in root:
                crypto = WeChatCrypto(self.token, AES_KEY, settings.WECHAT_OFFICIAL_APPID)
                root = xmltodict.parse(
                    crypto.decrypt_message(text, root["MsgSignature"], root["TimeStamp"], root["Nonce"])
                )["xml"]
            return dict(root)

        def verify(self, echostr, bad=False, *, timestamp=None, nonce=None):
            params = self.params(bad, timestamp=timestamp, nonce=nonce) | {"echostr": echostr}
            return client.get("/wechat/official", params)

    return Official()


@pytest.fixture
def aes(settings):
    """The AES key set, in the mode that is then the default: safe (encrypted messages only)."""
    settings.WECHAT_OFFICIAL_AES_KEY = AES_KEY
    settings.WECHAT_OFFICIAL_MODE = "safe"
    return AES_KEY


@pytest.fixture
def compatible(aes, settings):
    """Compatible mode: plaintext and encrypted messages both accepted."""
    settings.WECHAT_OFFICIAL_MODE = "compatible"
    return aes
