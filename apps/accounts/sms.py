"""SMS providers (``settings.SMS_BACKEND``): the interface, a log backend, and Tencent Cloud SMS.

Every backend has ``send(*, phone, text, key, template="", params=())`` (:class:`SmsBackend`) and
raises on failure (:class:`SmsSendFailed` or a network error) so the caller retries or reports it.
:class:`TencentSmsBackend` speaks Tencent Cloud's SMS API 2021-01-11 (``SendSms``) over HTTPS,
each request signed with TC3-HMAC-SHA256 as Tencent documents it ("签名方法 v3"); ``make run``
points it at the sandbox (``wechat_sandbox/sms.py``), which verifies the signature and records
the messages.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import time
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)


class SmsSendFailed(Exception):
    """The provider answered but refused the message (its error code and text)."""


class SmsBackend:
    """Interface: ``send(*, phone, text, key, template="", params=())``, raising on failure.

    ``text`` is the whole message (what a log shows), ``template`` the shop's name of the provider
    template (``"code"``, ``"order_paid"``: ``SMS_TEMPLATE_CODE`` / ``SMS_TEMPLATE_ORDER_PAID``)
    and ``params`` its values, ``key`` unique per message (for dedupe).
    """

    def send(self, *, phone: str, text: str, key: str, template: str = "", params: tuple = ()) -> None:
        raise NotImplementedError


class LogSmsBackend(SmsBackend):
    """Development: writes the message to the log instead of sending it."""

    def send(self, *, phone: str, text: str, key: str, template: str = "", params: tuple = ()) -> None:
        logger.info("SMS to %s [%s]: %s", phone, key, text)


SERVICE, VERSION, ACTION = "sms", "2021-01-11", "SendSms"


def tc3_authorization(
    *,
    secret_id: str,
    secret_key: str,
    host: str,
    path: str,
    payload: bytes,
    timestamp: int,
    service: str = SERVICE,
    content_type: str = "application/json; charset=utf-8",
) -> str:
    """The ``Authorization`` header of a Tencent Cloud API 3.0 POST (TC3-HMAC-SHA256):
    canonical request over ``content-type`` and ``host``, string to sign with the UTC date of
    ``timestamp`` (epoch seconds), the key derived ``TC3``+key -> date -> service -> ``tc3_request``."""
    date = dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d")
    canonical = "\n".join(
        [
            "POST",
            path or "/",
            "",
            f"content-type:{content_type}\nhost:{host}\n",
            "content-type;host",
            hashlib.sha256(payload).hexdigest(),
        ]
    )
    scope = f"{date}/{service}/tc3_request"
    to_sign = "\n".join(["TC3-HMAC-SHA256", str(timestamp), scope, hashlib.sha256(canonical.encode()).hexdigest()])

    def _hmac(key: bytes, msg: str) -> bytes:
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()

    signing = _hmac(_hmac(_hmac(("TC3" + secret_key).encode(), date), service), "tc3_request")
    signature = hmac.new(signing, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"TC3-HMAC-SHA256 Credential={secret_id}/{scope}, SignedHeaders=content-type;host, Signature={signature}"


class TencentSmsBackend(SmsBackend):
    """Tencent Cloud SMS (``SMS_TENCENT_*``, ``SMS_SIGN_NAME``, ``SMS_TEMPLATE_*``).

    Raises SmsSendFailed when Tencent refuses the request (``Response.Error``) or the number
    (``SendStatusSet[0].Code`` not ``Ok``), ``requests.RequestException`` when unreachable.
    """

    def send(self, *, phone: str, text: str, key: str, template: str = "", params: tuple = ()) -> None:
        template_id = {"code": settings.SMS_TEMPLATE_CODE, "order_paid": settings.SMS_TEMPLATE_ORDER_PAID}.get(template)
        if not template_id:
            raise SmsSendFailed(f"no Tencent template for {template!r}")
        number = phone if phone.startswith("+") else f"+86{phone}"
        payload = json.dumps(
            {
                "PhoneNumberSet": [number.replace(" ", "")],
                "SmsSdkAppId": settings.SMS_TENCENT_SDK_APP_ID,
                "SignName": settings.SMS_SIGN_NAME,
                "TemplateId": template_id,
                "TemplateParamSet": [str(p) for p in params],
                "SessionContext": key,
            },
            ensure_ascii=False,
        ).encode()
        url = urlsplit(settings.SMS_TENCENT_ENDPOINT)
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "Host": url.netloc,
            "X-TC-Action": ACTION,
            "X-TC-Version": VERSION,
            "X-TC-Region": settings.SMS_TENCENT_REGION,
            "X-TC-Timestamp": str(timestamp),
            "Authorization": tc3_authorization(
                secret_id=settings.SMS_TENCENT_SECRET_ID,
                secret_key=settings.SMS_TENCENT_SECRET_KEY,
                host=url.netloc,
                path=url.path or "/",
                payload=payload,
                timestamp=timestamp,
            ),
        }
        answer = (
            requests.post(
                settings.SMS_TENCENT_ENDPOINT, data=payload, headers=headers, timeout=settings.SMS_TIMEOUT_SECONDS
            )
            .json()
            .get("Response")
            or {}
        )
        if "Error" in answer:
            raise SmsSendFailed(f"{answer['Error'].get('Code')}: {answer['Error'].get('Message')}")
        status = (answer.get("SendStatusSet") or [{}])[0]
        if status.get("Code") != "Ok":
            raise SmsSendFailed(f"{status.get('Code')}: {status.get('Message')}")
        logger.info("SMS to %s [%s] accepted: %s", phone, key, status.get("SerialNo"))


def backend() -> SmsBackend:
    """The configured backend instance (``settings.SMS_BACKEND``, a dotted path)."""
    return import_string(settings.SMS_BACKEND)()
