"""Cloud receipt printers and electronic waybills behind two small interfaces.

- :class:`PrinterProvider` ``print(sn=, content=, copies=)`` -> the provider's print id:
  :class:`FeieProvider` (飞鹅云 ``Open_printMsg``), :class:`SandboxPrinterProvider` (the same at the
  sandbox, ``wechat_sandbox/printing.py``, with the sandbox's public account).
- :class:`WaybillProvider` ``order(...)`` -> :class:`Waybill` (tracking number, label URL):
  :class:`Kuaidi100WaybillProvider` (Kuaidi100 电子面单 ``label/order``), :class:`SandboxWaybillProvider`.
- Failures raise :class:`ProviderError`; ``retry`` is False when the provider refused the request
  itself (signature, account, a printer it does not know): trying again cannot help.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass

import requests
from django.conf import settings
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

#: The sandbox's public demo accounts (wechat_sandbox/printing.py; nothing secret).
SANDBOX_FEIE_USER, SANDBOX_FEIE_UKEY = "starmall-sandbox@feieyun", "starmallSandboxUkey0001"
SANDBOX_WAYBILL_KEY, SANDBOX_WAYBILL_SECRET = "starmallWaybillSandboxKey", "starmallWaybillSandboxSecret0001"


class ProviderError(Exception):
    """The provider did not accept the request; ``answer`` is what it said (or the HTTP error)."""

    def __init__(self, message: str, *, answer: str = "", retry: bool = True) -> None:
        super().__init__(message)
        self.message, self.answer, self.retry = message, answer, retry


def feie_sig(user: str, ukey: str, stime: str) -> str:
    """飞鹅's signature: SHA1 of ``user + ukey + stime`` (stime: Unix seconds), 40 lowercase hex."""
    return hashlib.sha1((user + ukey + stime).encode()).hexdigest()


def kuaidi100_sign(param: str, t: str, key: str, secret: str) -> str:
    """Kuaidi100's 电子面单 signature: MD5 of ``param + t + key + secret``, 32 uppercase hex."""
    return hashlib.md5((param + t + key + secret).encode()).hexdigest().upper()


def _post(url: str, data: dict) -> tuple[dict, str]:
    """POST a form; ``(JSON answer, raw text)``; ProviderError (retry) on transport errors."""
    try:
        response = requests.post(url, data=data, timeout=settings.PRINTING_TIMEOUT_SECONDS)
        response.raise_for_status()
        return response.json(), response.text
    except (requests.RequestException, ValueError) as exc:
        logger.warning("printing provider %s failed: %s", url, exc)
        raise ProviderError(f"服务商暂时无法连接：{type(exc).__name__}", answer=str(exc)[:500]) from exc


class PrinterProvider:
    """Interface: ``print(sn=, content=, copies=)`` -> print id; raises ProviderError."""

    def print(self, *, sn: str, content: str, copies: int) -> tuple[str, str]:  # pragma: no cover - interface
        """``(print id, raw answer)``."""
        raise NotImplementedError


class FeieProvider(PrinterProvider):
    """飞鹅云 ``Open_printMsg`` at ``PRINTER_FEIE_URL`` as ``PRINTER_FEIE_USER`` / ``PRINTER_FEIE_USER_KEY``.

    Form ``user``, ``stime``, ``sig`` (:func:`feie_sig`: sha1(user + UKEY + stime)), ``apiname``,
    ``sn``, ``content``, ``times``; answer ``{"ret": 0, "data": "<print id>"}``.
    """

    def __init__(self, *, url: str | None = None, user: str | None = None, ukey: str | None = None) -> None:
        self.url = url or settings.PRINTER_FEIE_URL
        self.user = settings.PRINTER_FEIE_USER if user is None else user
        self.ukey = settings.PRINTER_FEIE_USER_KEY if ukey is None else ukey

    def print(self, *, sn: str, content: str, copies: int) -> tuple[str, str]:
        stime = str(int(time.time()))
        form = {
            "user": self.user,
            "stime": stime,
            "sig": feie_sig(self.user, self.ukey, stime),
            "apiname": "Open_printMsg",
            "sn": sn,
            "content": content,
            "times": str(copies),
        }
        body, raw = _post(self.url, form)
        if body.get("ret") == 0 and body.get("data"):
            return str(body["data"]), raw
        # ret -2 (signature), -3 (api name), 1002 (unknown printer): the request itself is wrong
        raise ProviderError(f"打印机服务商拒绝：{body.get('msg') or body}", answer=raw[:2000], retry=False)


class SandboxPrinterProvider(FeieProvider):
    """The 飞鹅 protocol against the sandbox (``PRINTING_SANDBOX_BASE``) with its demo account."""

    def __init__(self) -> None:
        base = settings.PRINTING_SANDBOX_BASE.rstrip("/")
        super().__init__(url=f"{base}/Api/Open/", user=SANDBOX_FEIE_USER, ukey=SANDBOX_FEIE_UKEY)


PRINTERS = {"feie": FeieProvider, "sandbox": SandboxPrinterProvider}


def printer_provider(provider: str) -> PrinterProvider:
    """The implementation of a ``Printer.provider`` value."""
    return PRINTERS[provider]()


@dataclass(frozen=True)
class Waybill:
    """An ordered waybill: carrier (Kuaidi100 ``com``), tracking number, label URL, task id."""

    carrier_code: str
    tracking_no: str
    label_url: str
    task_id: str
    answer: str


@dataclass(frozen=True)
class Party:
    """A receiver or sender as a waybill prints them."""

    name: str
    mobile: str
    address: str


class WaybillProvider:
    """Interface: ``order(carrier_code=, receiver=, sender=, cargo=, count=, remark=)`` -> Waybill."""

    def order(
        self, *, carrier_code: str, receiver: Party, sender: Party, cargo: str, count: int, remark: str
    ) -> Waybill:  # pragma: no cover - interface
        raise NotImplementedError


class Kuaidi100WaybillProvider(WaybillProvider):
    """Kuaidi100 电子面单 ``label/order`` at ``WAYBILL_URL``; ``printType`` IMAGE (a label URL).

    Form ``method=order``, ``key``, ``t`` (ms), ``sign`` (:func:`kuaidi100_sign`: upper(md5(param +
    t + key + secret))), ``param`` JSON; answer ``{"success", "code", "message", "data": {"taskId",
    "kuaidinum", "label"}}``.
    """

    def __init__(self, *, url: str | None = None, key: str | None = None, secret: str | None = None) -> None:
        self.url = url or settings.WAYBILL_URL
        self.key = settings.WAYBILL_KEY if key is None else key
        self.secret = settings.WAYBILL_SECRET if secret is None else secret

    def order(self, *, carrier_code, receiver, sender, cargo, count, remark) -> Waybill:
        param = json.dumps(
            {
                "printType": "IMAGE",
                "partnerId": settings.WAYBILL_PARTNER_ID,
                "partnerKey": settings.WAYBILL_PARTNER_KEY,
                "kuaidicom": carrier_code,
                "recMan": {"name": receiver.name, "mobile": receiver.mobile, "printAddr": receiver.address},
                "sendMan": {"name": sender.name, "mobile": sender.mobile, "printAddr": sender.address},
                "cargo": cargo,
                "count": count,
                "remark": remark,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        t = str(int(time.time() * 1000))
        form = {"method": "order", "key": self.key, "t": t, "sign": kuaidi100_sign(param, t, self.key, self.secret)}
        body, raw = _post(self.url, {**form, "param": param})
        data = body.get("data") or {}
        if body.get("success") and str(body.get("code")) == "200" and data.get("kuaidinum"):
            return Waybill(
                carrier_code=str(data.get("kuaidicom") or carrier_code),
                tracking_no=str(data["kuaidinum"]),
                label_url=str(data.get("label") or ""),
                task_id=str(data.get("taskId") or ""),
                answer=raw[:2000],
            )
        # -1 is Kuaidi100's own hiccup (worth another try); 30001-30004 are ours to fix
        retry = str(body.get("code")) in ("-1", "500")
        raise ProviderError(f"面单服务商拒绝：{body.get('message') or body}", answer=raw[:2000], retry=retry)


class SandboxWaybillProvider(Kuaidi100WaybillProvider):
    """The Kuaidi100 protocol against the sandbox (``PRINTING_SANDBOX_BASE``) with its demo key."""

    def __init__(self) -> None:
        base = settings.PRINTING_SANDBOX_BASE.rstrip("/")
        super().__init__(url=f"{base}/label/order", key=SANDBOX_WAYBILL_KEY, secret=SANDBOX_WAYBILL_SECRET)


def waybill_provider() -> WaybillProvider:
    """``WAYBILL_PROVIDER`` (a dotted path; default: the sandbox)."""
    return import_string(settings.WAYBILL_PROVIDER)()
