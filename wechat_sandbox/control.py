"""The control API under ``/sandbox/``: JSON in, JSON out; what WeChat's users and servers do.

Each handler takes ``(state, request, **url_values)`` and returns a JSON-able object (HTTP
200), or raises ``SandboxError`` (4xx with ``{"error": message}``).
"""

from __future__ import annotations

import json

from werkzeug.routing import Rule
from werkzeug.wrappers import Request

from . import trades
from .faults import FaultError
from .state import SandboxError, SandboxState


def _json(request: Request) -> dict:
    raw = request.get_data(cache=True)
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SandboxError(f"body is not JSON: {exc}", 400) from exc
    if not isinstance(data, dict):
        raise SandboxError("body must be a JSON object", 400)
    return data


def _str(data: dict, key: str, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None or value == "":
        if required:
            raise SandboxError(f"{key} is required", 400)
        return None
    if not isinstance(value, str):
        raise SandboxError(f"{key} must be a string", 400)
    return value


def health(state: SandboxState, request: Request) -> dict:
    return {"status": "ok"}


def config(state: SandboxState, request: Request) -> dict:
    return state.config.to_dict()


def api_calls(state: SandboxState, request: Request) -> dict:
    """How often the shop called each WeChat API since the start or the last reset,
    e.g. ``{"pay/orderquery": 1, "pay/unifiedorder": 3}``."""
    with state.lock:
        return dict(state.api_calls)


def users(state: SandboxState, request: Request) -> object:
    if request.method == "GET":
        with state.lock:
            return [u.to_dict() for u in state.users.values()]
    data = _json(request)
    flags = {k: data[k] for k in ("blocked", "refuse_messages") if k in data}
    user = state.upsert_user(
        _str(data, "openid"),
        nickname=_str(data, "nickname"),
        unionid=_str(data, "unionid"),
        **flags,
    )
    return user.to_dict()


def login_codes(state: SandboxState, request: Request) -> dict:
    code = state.issue_login_code(_str(_json(request), "openid"))
    return {"code": code.code, "openid": code.openid, "expires_in": int(state.config.login_code_ttl_seconds)}


def pay(state: SandboxState, request: Request) -> dict:
    data = _json(request)
    coupon_fee = data.get("coupon_fee", 0) or 0
    trade, notification = trades.pay(
        state,
        _str(data, "out_trade_no", required=True),
        coupon_fee=coupon_fee,
        bank_type=_str(data, "bank_type"),
    )
    with state.lock:
        return {**trade.to_dict(), "notification_id": notification.id if notification else None}


def _user_action(action):
    def handler(state: SandboxState, request: Request) -> dict:
        trade = action(state, _str(_json(request), "out_trade_no", required=True))
        with state.lock:
            return trade.to_dict()

    return handler


def trade_list(state: SandboxState, request: Request) -> list:
    with state.lock:
        return [t.to_dict() for t in state.trades.values()]


def trade_detail(state: SandboxState, request: Request, out_trade_no: str) -> dict:
    with state.lock:
        trade = state.trades.get(out_trade_no)
        if trade is None:
            raise SandboxError(f"unknown out_trade_no {out_trade_no!r}", 404)
        return {**trade.to_dict(), "refunds": [r.to_dict() for r in state.refunds_of(out_trade_no)]}


def notifications(state: SandboxState, request: Request) -> list:
    kind, out_trade_no = request.args.get("kind"), request.args.get("out_trade_no")
    with state.lock:
        return [
            n.to_dict()
            for n in state.notifications.values()
            if (kind is None or n.kind == kind) and (out_trade_no is None or n.out_trade_no == out_trade_no)
        ]


def deliver(state: SandboxState, request: Request) -> dict:
    return {"attempts": state.deliver_pending()}


def resend(state: SandboxState, request: Request, notification_id: int) -> dict:
    return {"attempts": state.resend(notification_id)}


def messages(state: SandboxState, request: Request) -> list:
    touser = request.args.get("touser")
    with state.lock:
        return [m.to_dict() for m in state.messages if touser is None or m.touser == touser]


def robot_messages(state: SandboxState, request: Request) -> list:
    """The group-robot messages accepted so far (``?key=`` one robot), oldest first; DELETE
    forgets them (and with them the robot's per-minute count) and answers ``[]``."""
    key = request.args.get("key")
    with state.lock:
        if request.method == "DELETE":
            state.robot_messages.clear()
        return [m.to_dict() for m in state.robot_messages if key is None or m.key == key]


def refunds(state: SandboxState, request: Request) -> list:
    state.tick()
    with state.lock:
        return [r.to_dict() for r in state.refunds.values()]


def settle_refunds(state: SandboxState, request: Request) -> list:
    data = _json(request)
    done = trades.settle_refunds(state, _str(data, "out_refund_no"), _str(data, "status") or "SUCCESS")
    with state.lock:
        return [r.to_dict() for r in done]


def faults(state: SandboxState, request: Request) -> dict:
    if request.method == "POST":
        try:
            return state.faults.set(_json(request))
        except FaultError as exc:
            raise SandboxError(str(exc), 400) from exc
    if request.method == "DELETE":
        try:
            state.faults.clear(request.args.get("name"))
        except FaultError as exc:
            raise SandboxError(str(exc), 400) from exc
    return state.faults.snapshot()


def reset(state: SandboxState, request: Request) -> dict:
    state.reset()
    return {"status": "ok"}


HANDLERS = {
    "health": health,
    "config": config,
    "api_calls": api_calls,
    "users": users,
    "login_codes": login_codes,
    "pay": pay,
    "user_paying": _user_action(trades.user_paying),
    "cancel": _user_action(trades.cancel),
    "pay_error": _user_action(trades.pay_error),
    "trade_list": trade_list,
    "trade_detail": trade_detail,
    "notifications": notifications,
    "deliver": deliver,
    "resend": resend,
    "messages": messages,
    "robot_messages": robot_messages,
    "refunds": refunds,
    "settle_refunds": settle_refunds,
    "faults": faults,
    "reset": reset,
}


def rules() -> list[Rule]:
    """URL rules; endpoints are ``control:<handler name>``."""
    spec = [
        ("/sandbox/health", "health", ["GET"]),
        ("/sandbox/config", "config", ["GET"]),
        ("/sandbox/api-calls", "api_calls", ["GET"]),
        ("/sandbox/users", "users", ["GET", "POST"]),
        ("/sandbox/login-codes", "login_codes", ["POST"]),
        ("/sandbox/pay", "pay", ["POST"]),
        ("/sandbox/user-paying", "user_paying", ["POST"]),
        ("/sandbox/cancel", "cancel", ["POST"]),
        ("/sandbox/pay-error", "pay_error", ["POST"]),
        ("/sandbox/trades", "trade_list", ["GET"]),
        ("/sandbox/trades/<path:out_trade_no>", "trade_detail", ["GET"]),
        ("/sandbox/notifications", "notifications", ["GET"]),
        ("/sandbox/notifications/deliver", "deliver", ["POST"]),
        ("/sandbox/notifications/<int:notification_id>/resend", "resend", ["POST"]),
        ("/sandbox/messages", "messages", ["GET"]),
        ("/sandbox/robot-messages", "robot_messages", ["GET", "DELETE"]),
        ("/sandbox/refunds", "refunds", ["GET"]),
        ("/sandbox/refunds/settle", "settle_refunds", ["POST"]),
        ("/sandbox/faults", "faults", ["GET", "POST", "DELETE"]),
        ("/sandbox/reset", "reset", ["POST"]),
    ]
    return [Rule(path, endpoint=f"control:{name}", methods=methods) for path, name, methods in spec]
