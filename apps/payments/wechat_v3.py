"""WeChat Pay API v3: signing, verifying, decrypting, and merchant transfers (商家转账); with
``wechat_v3_pay.py`` (payments, refunds, bills) the only importers of ``wechatpayv3``.

Every call goes to ``settings.WECHAT_PAY_V3_API_BASE`` (the local sandbox by default,
``https://api.mch.weixin.qq.com`` in production) with ``settings.WECHAT_TIMEOUT_SECONDS``,
signed with the merchant private key (``WECHATPAY2-SHA256-RSA2048``); answers and notifications
are verified with WeChat Pay's public key (serial ``WECHAT_PAY_V3_PUBLIC_KEY_ID``), a timestamp
more than 5 minutes off refused. :class:`V3Unavailable`: the answer is unknown (query before
sending again); :class:`V3Refused`: a definite 4xx (``code``, ``message``).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import time
import uuid
from pathlib import Path

import requests
from django.conf import settings
from wechatpayv3.utils import aes_decrypt, load_private_key, load_public_key, rsa_sign, rsa_verify

AUTH_SCHEMA = "WECHATPAY2-SHA256-RSA2048"
MAX_SKEW_SECONDS = 300
TRANSFER_SCENE_COMMISSION = "1005"  # 佣金报酬


# The moment a notification is judged at (epoch seconds), when not now: :func:`judged_at`.
_judged_at: contextvars.ContextVar[float | None] = contextvars.ContextVar("wechat_v3_judged_at", default=None)


@contextlib.contextmanager
def judged_at(moment: float):
    """Notifications verified inside this block have their 5-minute timestamp window measured
    from ``moment`` (epoch seconds) instead of now: the worker applying a result the notify gate
    verified and queued at ``moment`` (``apps.payments.notify_queue``), however late it runs."""
    token = _judged_at.set(moment)
    try:
        yield
    finally:
        _judged_at.reset(token)


class V3Unavailable(Exception):
    """No trustworthy answer: the call may have taken effect. Query before resending."""


class V3Refused(Exception):
    """WeChat answered 4xx: ``code`` (e.g. ``NOT_FOUND``, ``PARAM_ERROR``), ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class V3BadNotification(Exception):
    """A notification whose signature, timestamp or ciphertext does not check out."""


class V3BadSignature(V3BadNotification):
    """A notification whose signature, serial or timestamp does not verify (not WeChat's)."""


@functools.lru_cache(maxsize=4)
def _pem(path: str) -> str:
    return Path(path).read_text()


def _private_key():
    return _private_key_of(settings.WECHAT_PAY_V3_MCH_PRIVATE_KEY)


def _public_key():
    return _public_key_of(settings.WECHAT_PAY_V3_PUBLIC_KEY)


@functools.lru_cache(maxsize=4)
def _private_key_of(path: str):
    """The merchant's key, parsed once per file (parsing checks the RSA key: milliseconds)."""
    return load_private_key(_pem(path))


@functools.lru_cache(maxsize=4)
def _public_key_of(path: str):
    return load_public_key(_pem(path))


def authorization(
    method: str, path_with_query: str, body: str, *, timestamp: int | None = None, nonce: str | None = None
) -> str:
    """The ``Authorization`` header for one request (WECHAT.md: the signed message is
    ``METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nBODY\\n``)."""
    timestamp = timestamp or int(time.time())
    nonce = nonce or uuid.uuid4().hex.upper()
    message = f"{method}\n{path_with_query}\n{timestamp}\n{nonce}\n{body}\n"
    signature = rsa_sign(_private_key(), message)
    return (
        f'{AUTH_SCHEMA} mchid="{settings.WECHAT_MCH_ID}",nonce_str="{nonce}",signature="{signature}",'
        f'timestamp="{timestamp}",serial_no="{settings.WECHAT_PAY_V3_MCH_SERIAL}"'
    )


def _header(headers, name: str) -> str:
    return headers.get(name) or headers.get(name.lower()) or ""


def signature_valid(headers, body: str) -> bool:
    """True if ``Wechatpay-Signature`` over ``TIMESTAMP\\nNONCE\\nBODY\\n`` verifies with
    WeChat Pay's public key, the serial is its id, and the timestamp is within 5 minutes (of
    now, or of :func:`judged_at`'s moment)."""
    timestamp, nonce = _header(headers, "Wechatpay-Timestamp"), _header(headers, "Wechatpay-Nonce")
    signature, serial = _header(headers, "Wechatpay-Signature"), _header(headers, "Wechatpay-Serial")
    if not (timestamp and nonce and signature) or serial != settings.WECHAT_PAY_V3_PUBLIC_KEY_ID:
        return False
    try:
        now = _judged_at.get()
        if abs((time.time() if now is None else now) - int(timestamp)) > MAX_SKEW_SECONDS:
            return False
    except ValueError:
        return False
    return rsa_verify(timestamp, nonce, body, signature, _public_key())


def _send(method: str, path: str, body: str) -> requests.Response:
    """Send one signed v3 request (``path`` with its query); raises V3Refused for a 4xx answer,
    V3Unavailable for no answer or anything but 2xx."""
    headers = {
        "Authorization": authorization(method, path, body),
        "Accept": "application/json",
        "Content-Type": "application/json",
        "Wechatpay-Serial": settings.WECHAT_PAY_V3_PUBLIC_KEY_ID,
        "User-Agent": "starmall",
    }
    try:
        response = requests.request(
            method,
            settings.WECHAT_PAY_V3_API_BASE + path,
            data=body.encode() or None,
            headers=headers,
            timeout=settings.WECHAT_TIMEOUT_SECONDS,
            allow_redirects=False,
        )
    except requests.RequestException as exc:
        raise V3Unavailable(f"{type(exc).__name__}: {exc}") from exc
    text = response.text
    if 400 <= response.status_code < 500:
        try:
            answer = json.loads(text)
        except ValueError:
            answer = {}
        raise V3Refused(response.status_code, str(answer.get("code", "")), str(answer.get("message", text[:200])))
    if not 200 <= response.status_code < 300:
        raise V3Unavailable(f"HTTP {response.status_code}: {text[:200]}")
    return response


def request(method: str, path: str, data: dict | None = None) -> dict:
    """Send one signed v3 request; the verified JSON answer (``{}`` for an empty 2xx body).

    Raises V3Refused (4xx, definite) or V3Unavailable (anything uncertain).
    """
    # The bytes signed are the bytes sent: wechatpayv3's own client signs one serialization and
    # sends another (and cannot be pointed at another host), hence only its helpers are used.
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")) if data is not None else ""
    response = _send(method, path, body)
    text = response.text
    if not signature_valid(response.headers, text):
        raise V3Unavailable("the answer's signature does not verify")
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise V3Unavailable(f"unparsable answer: {text[:200]}") from exc


def download(path_with_query: str) -> bytes:
    """A signed GET of a file WeChat offers (a bill's ``download_url``, its path and query sent
    to ``WECHAT_PAY_V3_API_BASE``): the raw bytes. WeChat does not sign a file's answer; the
    caller checks the hash it was given. Raises V3Refused / V3Unavailable."""
    return _send("GET", path_with_query, "").content


def transfer_create(*, out_bill_no: str, openid: str, amount_fen: int, remark: str, notify_url: str) -> dict:
    """``POST /v3/fund-app/mch-transfer/transfer-bills`` (scene 1005 佣金报酬); the answer
    ``{"out_bill_no", "transfer_bill_no", "create_time", "state", "package_info"}``. The same
    ``out_bill_no`` again answers the same bill, never a second transfer."""
    return request(
        "POST",
        "/v3/fund-app/mch-transfer/transfer-bills",
        {
            "appid": settings.WECHAT_APPID,
            "out_bill_no": out_bill_no,
            "transfer_scene_id": TRANSFER_SCENE_COMMISSION,
            "openid": openid,
            "transfer_amount": amount_fen,
            "transfer_remark": remark[:32],
            "notify_url": notify_url,
            "user_recv_perception": "佣金报酬",
            "transfer_scene_report_infos": [
                {"info_type": "岗位类型", "info_content": "推广员"},
                {"info_type": "报酬说明", "info_content": "分销佣金"},
            ],
        },
    )


def transfer_query(*, out_bill_no: str) -> dict | None:
    """``GET .../transfer-bills/out-bill-no/{out_bill_no}``: the bill (``state``,
    ``fail_reason``...), or None when WeChat has no such bill (``NOT_FOUND``)."""
    try:
        return request("GET", f"/v3/fund-app/mch-transfer/transfer-bills/out-bill-no/{out_bill_no}")
    except V3Refused as exc:
        if exc.status == 404 or exc.code == "NOT_FOUND":
            return None
        raise


def transfer_cancel(*, out_bill_no: str) -> dict:
    """``POST .../out-bill-no/{out_bill_no}/cancel``: ``{"state": "CANCELING"|"CANCELLED"}``."""
    return request("POST", f"/v3/fund-app/mch-transfer/transfer-bills/out-bill-no/{out_bill_no}/cancel", {})


def notification_parse(headers, body: bytes) -> dict:
    """Verify a v3 notification and decrypt its resource; returns ``{"event_type",
    "original_type", "associated_data", "resource": {...decrypted...}}``. Raises V3BadSignature (signature, serial, timestamp) or
    V3BadNotification (unparsable, undecryptable)."""
    text = body.decode("utf-8", errors="replace")
    if not signature_valid(headers, text):
        raise V3BadSignature("signature or timestamp does not verify")
    try:
        envelope = json.loads(text)
        resource = envelope["resource"]
        if resource.get("algorithm") != "AEAD_AES_256_GCM":
            raise V3BadNotification(f"unknown algorithm {resource.get('algorithm')!r}")
        plain = aes_decrypt(
            nonce=resource["nonce"],
            ciphertext=resource["ciphertext"],
            associated_data=resource.get("associated_data") or "",
            apiv3_key=settings.WECHAT_PAY_V3_KEY,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise V3BadNotification(f"unparsable notification: {exc}") from exc
    if plain is None:
        raise V3BadNotification("the resource does not decrypt with the APIv3 key")
    try:
        return {
            "event_type": envelope.get("event_type", ""),
            "original_type": resource.get("original_type") or "",
            "associated_data": resource.get("associated_data") or "",
            "resource": json.loads(plain),
        }
    except ValueError as exc:
        raise V3BadNotification("decrypted resource is not JSON") from exc
