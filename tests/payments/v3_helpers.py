"""Pay API v3 in the payments tests: the sandbox's v3 notices delivered through Django's test
client, and hand-made notices WeChat would never send (forged, stale, tampered, foreign)."""

from __future__ import annotations

import base64
import json
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from wechat_sandbox import pay_v3

KEYS = Path(pay_v3.__file__).resolve().parent / "keys"
V3_NOTIFY = "/api/v1/payments/wechat/v3/notify"
V3_REFUND_NOTIFY = "/api/v1/payments/wechat/v3/refund-notify"


@pytest.fixture
def v3pay(wechat, settings, django_capture_on_commit_callbacks):
    """``WECHAT_PAY_API = "v3"`` against the test sandbox; ``v3pay.deliver()`` sends the
    sandbox's pending v3 notices through Django's test client (on_commit run as after a
    commit) and returns the attempts."""
    from django.test import Client

    settings.WECHAT_PAY_API = "v3"
    settings.WECHAT_PAY_V3_API_BASE = wechat.url.rstrip("/")
    client = Client()

    def transport(url: str, body: bytes, headers: dict) -> tuple[int, str]:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                urlparse(url).path,
                data=body,
                content_type="application/json",
                headers={k: v for k, v in headers.items() if k != "Content-Type"},
            )
        return response.status_code, response.content.decode()

    store = pay_v3.v3(wechat.state)
    store.transport = transport

    class V3:
        state = store

        @staticmethod
        def deliver() -> list[dict]:
            return pay_v3.deliver(wechat.state)

        @staticmethod
        def resend(note: dict) -> tuple[int, str]:
            return transport(note["url"], note["body"].encode(), dict(note["headers"]))

    return V3


def _platform_key():
    return serialization.load_pem_private_key((KEYS / "platform_private.pem").read_bytes(), password=None)


def headers_for(body: str, *, timestamp: int | None = None, serial: str | None = None, key=None) -> dict:
    """WeChat's ``Wechatpay-*`` headers over ``body``: signed by the sandbox's platform key (or
    ``key``), at ``timestamp``, naming ``serial`` (default: the public key id)."""
    timestamp = timestamp or int(time.time())
    nonce = uuid.uuid4().hex
    signature = (key or _platform_key()).sign(
        f"{timestamp}\n{nonce}\n{body}\n".encode(), padding.PKCS1v15(), hashes.SHA256()
    )
    return {
        "Wechatpay-Timestamp": str(timestamp),
        "Wechatpay-Nonce": nonce,
        "Wechatpay-Signature": base64.b64encode(signature).decode(),
        "Wechatpay-Serial": serial or pay_v3.public_key_id(),
    }


def envelope(resource: dict, *, event_type: str = "TRANSACTION.SUCCESS", original_type: str = "transaction") -> str:
    """A v3 notification body with ``resource`` encrypted under the sandbox's APIv3 key."""
    nonce = "0123456789ab"
    cipher = AESGCM(pay_v3.apiv3_key().encode()).encrypt(
        nonce.encode(), json.dumps(resource).encode(), original_type.encode()
    )
    return json.dumps(
        {
            "id": str(uuid.uuid4()),
            "create_time": "2026-12-06T10:00:00+08:00",
            "event_type": event_type,
            "resource_type": "encrypt-resource",
            "summary": "支付成功",
            "resource": {
                "original_type": original_type,
                "algorithm": "AEAD_AES_256_GCM",
                "ciphertext": base64.b64encode(cipher).decode(),
                "associated_data": original_type,
                "nonce": nonce,
            },
        }
    )


def transaction(out_trade_no: str, total: int, **changes) -> dict:
    """A ``TRANSACTION.SUCCESS`` resource of ``total`` fen (``changes`` replace fields)."""
    resource = {
        "appid": "wx8d5f3c1a2b4e6f70",
        "mchid": "1900000109",
        "out_trade_no": out_trade_no,
        "transaction_id": "4200009999202612061234567890",
        "trade_type": "JSAPI",
        "trade_state": "SUCCESS",
        "trade_state_desc": "支付成功",
        "bank_type": "OTHERS",
        "success_time": "2026-12-06T10:00:00+08:00",
        "payer": {"openid": "oX"},
        "amount": {"total": total, "payer_total": total, "currency": "CNY", "payer_currency": "CNY"},
    }
    resource.update(changes)
    return resource


def post_v3(client, body: str, headers: dict, path: str = V3_NOTIFY):
    return client.post(path, data=body, content_type="application/json", headers=headers)
