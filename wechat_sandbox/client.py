"""``SandboxControl``: a small client of the sandbox's ``/sandbox/`` control API.

For tests and scripts that drive the sandbox over HTTP (the shop's own tests, the demo)::

    control = SandboxControl("http://127.0.0.1:8001/")
    code = control.login_code()["code"]
    ...
    control.pay("SM20261130000001")
    control.deliver()
"""

from __future__ import annotations

import requests


class SandboxControlError(Exception):
    """The control API refused a request: ``status`` (HTTP) and ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class SandboxControl:
    """Methods mirror the control API; each returns the decoded JSON answer.

    Args:
        base_url: the sandbox base URL, e.g. ``http://127.0.0.1:8001/``.
        timeout: seconds per request.
    """

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self.timeout = timeout
        self._http = requests.Session()

    def _call(self, method: str, path: str, json: dict | None = None, params: dict | None = None) -> object:
        response = self._http.request(
            method,
            self.base_url + "sandbox/" + path,
            json=json,
            params=params,
            timeout=self.timeout,
        )
        try:
            data = response.json()
        except ValueError:
            data = {"error": response.text}
        if response.status_code >= 400:
            message = data.get("error", "") if isinstance(data, dict) else str(data)
            raise SandboxControlError(response.status_code, message)
        return data

    def health(self) -> dict:
        return self._call("GET", "health")

    def config(self) -> dict:
        return self._call("GET", "config")

    def create_user(self, openid: str | None = None, nickname: str | None = None, **flags) -> dict:
        """Create or update a user; ``flags``: unionid, blocked, refuse_messages."""
        body = {"openid": openid, "nickname": nickname, **flags}
        return self._call("POST", "users", {k: v for k, v in body.items() if v is not None})

    def users(self) -> list:
        return self._call("GET", "users")

    def login_code(self, openid: str | None = None) -> dict:
        """``{"code", "openid", "expires_in"}``: a single-use ``wx.login`` code."""
        return self._call("POST", "login-codes", {"openid": openid} if openid else {})

    def pay(self, out_trade_no: str, coupon_fee: int = 0, bank_type: str | None = None) -> dict:
        """The user pays (``coupon_fee`` fen by coupon); returns the trade and notification_id."""
        body: dict = {"out_trade_no": out_trade_no, "coupon_fee": coupon_fee}
        if bank_type:
            body["bank_type"] = bank_type
        return self._call("POST", "pay", body)

    def user_paying(self, out_trade_no: str) -> dict:
        return self._call("POST", "user-paying", {"out_trade_no": out_trade_no})

    def cancel(self, out_trade_no: str) -> dict:
        return self._call("POST", "cancel", {"out_trade_no": out_trade_no})

    def pay_error(self, out_trade_no: str) -> dict:
        return self._call("POST", "pay-error", {"out_trade_no": out_trade_no})

    def trades(self) -> list:
        return self._call("GET", "trades")

    def trade(self, out_trade_no: str) -> dict:
        return self._call("GET", f"trades/{out_trade_no}")

    def notifications(self, kind: str | None = None, out_trade_no: str | None = None) -> list:
        params = {k: v for k, v in (("kind", kind), ("out_trade_no", out_trade_no)) if v}
        return self._call("GET", "notifications", params=params)

    def deliver(self) -> list:
        """Deliver every pending notice once now; returns the attempts."""
        return self._call("POST", "notifications/deliver")["attempts"]

    def resend(self, notification_id: int) -> list:
        """Send a notice again (even if acknowledged); returns the attempts."""
        return self._call("POST", f"notifications/{int(notification_id)}/resend")["attempts"]

    def messages(self, touser: str | None = None) -> list:
        return self._call("GET", "messages", params={"touser": touser} if touser else None)

    def robot_messages(self, key: str | None = None) -> list:
        """The enterprise-WeChat group-robot messages the sandbox accepted, oldest first."""
        return self._call("GET", "robot-messages", params={"key": key} if key else None)

    def clear_robot_messages(self) -> list:
        return self._call("DELETE", "robot-messages")

    def refunds(self) -> list:
        return self._call("GET", "refunds")

    def settle_refunds(self, out_refund_no: str | None = None, status: str = "SUCCESS") -> list:
        body: dict = {"status": status}
        if out_refund_no:
            body["out_refund_no"] = out_refund_no
        return self._call("POST", "refunds/settle", body)

    def set_faults(self, faults: dict | None = None, **by_name: dict) -> dict:
        """Install faults, e.g. ``set_faults({"pay/orderquery": {"drop": True, "count": 1}})``
        or ``set_faults(unifiedorder={"delay_seconds": 2, "count": 1})``; returns all faults."""
        return self._call("POST", "faults", {**(faults or {}), **by_name})

    def faults(self) -> dict:
        return self._call("GET", "faults")

    def clear_faults(self, name: str | None = None) -> dict:
        return self._call("DELETE", "faults", params={"name": name} if name else None)

    def reset(self) -> dict:
        return self._call("POST", "reset")

    # --- the official account, SMS, phone numbers (official.py, sms.py, phone.py) --------------

    def official_verify(self, url: str, **extra) -> dict:
        """WeChat's signed GET of the shop's official-account URL: ``{"status", "body", "echostr"}``."""
        return self._call("POST", "official/verify", json={"url": url, **extra})

    def official_send(self, url: str, message: dict, **extra) -> dict:
        """A user's message or event POSTed to the shop (``encrypt=True, aes_key=...`` for safe
        mode): ``{"status", "body", "reply", "elapsed_ms"}``."""
        return self._call("POST", "official/send", json={"url": url, "message": message, **extra})

    def official_records(self) -> dict:
        """Menus, materials, mass sends and exchanges the sandbox recorded."""
        return self._call("GET", "official")

    def sms_messages(self) -> list:
        """The SMS the Tencent Cloud SMS sandbox accepted, oldest first."""
        return self._call("GET", "sms")["messages"]

    def phone_code(self, phone: str, country_code: str = "86") -> str:
        """A getPhoneNumber code for ``phone`` (single use, 5 minutes)."""
        return self._call("POST", "phone-codes", json={"phone": phone, "country_code": country_code})["code"]

    # --- shipping information (shipping.py) ------------------------------------------------------

    def shipping(self) -> dict:
        """``{"orders": {out_trade_no: {"order_state", "uploads", "shipping", ...}}, "uploads":
        [every accepted upload, oldest first], "jump_path", "trade_managed"}``."""
        return self._call("GET", "shipping")

    def clear_shipping(self) -> dict:
        return self._call("DELETE", "shipping")
