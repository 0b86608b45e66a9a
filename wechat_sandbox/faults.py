"""Fault switches for fault-injection tests.

A fault is set per API endpoint or per notification kind and applies to the next ``count``
calls (or notifications), then clears itself; without ``count`` it stays until cleared.

API endpoint faults (``pay/unifiedorder``, ``pay/orderquery``, ``pay/closeorder``,
``secapi/pay/refund``, ``pay/refundquery``, ``pay/downloadbill``, ``sns/jscode2session``,
``cgi-bin/token``, ``cgi-bin/message/subscribe/send``, the group robot's ``cgi-bin/webhook/send``,
the shipping-information ``wxa/sec/order/*`` (shipping.py); short aliases ``unifiedorder``, ...,
``robot``, ``upload_shipping_info``, ``set_msg_jump_path``):

- ``delay_seconds`` (float): the call is processed, then answered that late (client timeouts).
- ``drop`` (``true``/``"close"`` or ``"500"``): the call is processed, then the connection is
  closed without an answer (or HTTP 500 is answered): the caller cannot know what happened.
- ``system_error`` (bool): not processed; Pay answers result_code FAIL, err_code SYSTEMERROR
  (mini-program endpoints and the robot: errcode -1 "system error").
- ``err_code`` (str): like ``system_error`` with another code, e.g. ``BIZERR_NEED_RETRY``.
- ``rate_limit`` (bool, mini-program endpoints): not processed; errcode 45011 (the robot: 45009).
- ``errcode`` (int, mini-program endpoints): not processed; that errcode is answered (e.g.
  10060001 on ``upload_shipping_info``: WeChat does not know the payment yet).

Notification faults (``notify`` for payment notices, ``refund_notify`` for refund notices),
taken when a notice is created:

- ``duplicate`` (bool): every delivery round of the notice goes out twice at once (WeChat may
  deliver the same notice from several servers within seconds).
- ``late_seconds`` (float): the first attempt waits that long (the shop may query first).
"""

from __future__ import annotations

import threading

API_ENDPOINTS = (
    "pay/unifiedorder",
    "pay/orderquery",
    "pay/closeorder",
    "secapi/pay/refund",
    "pay/refundquery",
    "pay/downloadbill",
    "sns/jscode2session",
    "cgi-bin/token",
    "cgi-bin/message/subscribe/send",
    "cgi-bin/webhook/send",
    "wxa/sec/order/upload_shipping_info",
    "wxa/sec/order/is_trade_managed",
    "wxa/sec/order/set_msg_jump_path",
    "wxa/sec/order/get_order",
)
NOTIFY_KINDS = ("notify", "refund_notify")

ALIASES = {
    "unifiedorder": "pay/unifiedorder",
    "orderquery": "pay/orderquery",
    "closeorder": "pay/closeorder",
    "refund": "secapi/pay/refund",
    "refundquery": "pay/refundquery",
    "downloadbill": "pay/downloadbill",
    "jscode2session": "sns/jscode2session",
    "token": "cgi-bin/token",
    "subscribe_send": "cgi-bin/message/subscribe/send",
    "robot": "cgi-bin/webhook/send",
    "payment_notify": "notify",
    "upload_shipping_info": "wxa/sec/order/upload_shipping_info",
    "set_msg_jump_path": "wxa/sec/order/set_msg_jump_path",
}

API_KEYS = {"delay_seconds", "drop", "system_error", "err_code", "errcode", "rate_limit", "count"}
NOTIFY_KEYS = {"duplicate", "late_seconds", "count"}


class FaultError(ValueError):
    """A fault spec that the sandbox does not understand."""


def canonical_name(name: str) -> str:
    """``"unifiedorder"`` or ``"/pay/unifiedorder"`` -> ``"pay/unifiedorder"``."""
    name = ALIASES.get(name.strip("/"), name.strip("/"))
    if name not in API_ENDPOINTS and name not in NOTIFY_KINDS:
        known = ", ".join(API_ENDPOINTS + NOTIFY_KINDS)
        raise FaultError(f"unknown fault target {name!r}; known: {known}")
    return name


def _validate(name: str, spec: dict) -> dict:
    if not isinstance(spec, dict):
        raise FaultError(f"fault for {name} must be an object")
    allowed = NOTIFY_KEYS if name in NOTIFY_KINDS else API_KEYS
    unknown = set(spec) - allowed
    if unknown:
        raise FaultError(f"unknown keys for {name}: {sorted(unknown)}; allowed: {sorted(allowed)}")
    out = dict(spec)
    if "count" in out and out["count"] is not None:
        if not isinstance(out["count"], int) or isinstance(out["count"], bool) or out["count"] < 1:
            raise FaultError("count must be a positive integer")
    for key in ("delay_seconds", "late_seconds"):
        if key in out:
            if not isinstance(out[key], (int, float)) or out[key] < 0:
                raise FaultError(f"{key} must be a number >= 0")
    if "errcode" in out and (not isinstance(out["errcode"], int) or isinstance(out["errcode"], bool)):
        raise FaultError("errcode must be an integer")
    if "drop" in out and out["drop"] not in (True, False, "close", "500", 500):
        raise FaultError('drop must be true, "close" or "500"')
    return out


class Faults:
    """Thread-safe registry: ``set`` / ``take`` / ``snapshot`` / ``clear``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._specs: dict[str, dict] = {}

    def set(self, specs: dict) -> dict:
        """Install ``{target: spec}`` (replacing the spec of each named target; an empty or null
        spec removes it). Returns the full table. Raises ``FaultError`` on a bad spec."""
        if not isinstance(specs, dict):
            raise FaultError("faults must be an object {target: spec}")
        validated = {}
        for name, spec in specs.items():
            target = canonical_name(name)
            validated[target] = _validate(target, spec) if spec else None
        with self._lock:
            for target, spec in validated.items():
                if spec:
                    self._specs[target] = spec
                else:
                    self._specs.pop(target, None)
            return self._copy()

    def take(self, target: str) -> dict | None:
        """The fault for one call/notice of ``target``, decrementing its ``count`` (and removing
        it at zero); None when no fault is set."""
        with self._lock:
            spec = self._specs.get(target)
            if spec is None:
                return None
            count = spec.get("count")
            if count is not None:
                if count <= 1:
                    del self._specs[target]
                else:
                    spec["count"] = count - 1
            return dict(spec)

    def snapshot(self) -> dict:
        with self._lock:
            return self._copy()

    def clear(self, target: str | None = None) -> None:
        with self._lock:
            if target is None:
                self._specs.clear()
            else:
                self._specs.pop(canonical_name(target), None)

    def _copy(self) -> dict:
        return {k: dict(v) for k, v in self._specs.items()}
