"""WeChat Pay API v3 in the sandbox: merchant transfer bills (商家转账) and mini-program codes.

- Requests must carry a valid ``WECHATPAY2-SHA256-RSA2048`` Authorization (the merchant's
  key, ``keys/merchant_public.pem`` verifies it; wrong mchid/serial, a timestamp 5+ minutes
  off or a bad signature: 401 ``SIGN_ERROR``). Answers are signed with the sandbox's own
  WeChat Pay key (``keys/platform_private.pem``; serial = the public key id).
- ``POST /v3/fund-app/mch-transfer/transfer-bills`` creates a bill (``WAIT_USER_CONFIRM`` with
  a ``package_info``); the same ``out_bill_no`` answers the same bill. ``GET .../out-bill-no/
  {no}`` queries (404 ``NOT_FOUND``), ``POST .../cancel`` cancels an unconfirmed bill.
- ``POST wxa/getwxacodeunlimit?access_token=`` answers a real PNG (segno QR) of the scene.
- Control: ``POST /sandbox/v3/transfers/{no}/confirm`` ``{"result": "success"|"fail"|
  "cancel", "notify": true}`` is the user confirming in WeChat (or a FAIL/CANCELLED fault); the
  final state is notified to the bill's ``notify_url`` (signed, AES-256-GCM encrypted).
  ``GET /sandbox/v3/transfers``; ``POST /sandbox/v3/faults`` ``{"transfer_create":
  "drop_answer"|"system_error"|"param_error"|"not_enough", "times": 1}`` (drop_answer: the bill is
  made, the answer lost);
  ``POST /sandbox/v3/notifications/deliver`` resends pending notifications.
"""

from __future__ import annotations

import base64
import collections
import io
import json
import logging
import os
import re
import secrets
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import requests
import segno
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from werkzeug.wrappers import Request, Response

from . import wire
from .state import SandboxState

log = logging.getLogger("wechat_sandbox.pay_v3")

KEYS = Path(__file__).resolve().parent / "keys"
DEMO_MCH_SERIAL = "5157F09EFDC096DE15EBE81A47057A72SANDBOX0"
DEMO_PUBLIC_KEY_ID = "PUB_KEY_ID_0119000001092026120100SANDBOX"
DEMO_APIV3_KEY = "starmall0sandbox0apiv3key0000032"
BILLS = "/v3/fund-app/mch-transfer/transfer-bills"
STATES_FINAL = ("SUCCESS", "FAIL", "CANCELLED")
JSON = "application/json; charset=utf-8"


@dataclass
class Bill:
    out_bill_no: str
    transfer_bill_no: str
    openid: str
    amount: int
    notify_url: str
    remark: str
    state: str = "WAIT_USER_CONFIRM"
    package_info: str = ""
    fail_reason: str = ""
    create_time: str = ""
    update_time: str = ""

    def to_dict(self) -> dict:
        return {
            "out_bill_no": self.out_bill_no,
            "transfer_bill_no": self.transfer_bill_no,
            "state": self.state,
            "openid": self.openid,
            "transfer_amount": self.amount,
            "transfer_remark": self.remark,
            "fail_reason": self.fail_reason,
            "create_time": self.create_time,
            "update_time": self.update_time,
        }


@dataclass
class V3State:
    bills: dict[str, Bill] = field(default_factory=dict)
    creates: collections.Counter = field(default_factory=collections.Counter)  # create calls per out_bill_no
    faults: dict[str, list[str]] = field(default_factory=dict)  # target -> queued fault kinds
    pending: list[dict] = field(default_factory=list)  # notifications not yet acknowledged
    delivered: list[dict] = field(default_factory=list)
    transport: object = None  # (url, body, headers) -> (status, text); None: HTTP POST (tests swap it)
    codes: list[dict] = field(default_factory=list)  # getwxacodeunlimit calls
    files: dict[str, str] = field(default_factory=dict)  # bill download token -> text (pay_v3_trades.py)
    notes: list[dict] = field(default_factory=list)  # every notification queued, with its attempts


def v3(state: SandboxState) -> V3State:
    with state.lock:
        if getattr(state, "pay_v3", None) is None:
            state.pay_v3 = V3State()
        return state.pay_v3


def _pem(name: str, env: str) -> bytes:
    return Path(os.environ.get(env) or KEYS / name).read_bytes()


_keys_lock = threading.Lock()
_keys: dict[str, object] = {}


def _key(kind: str):
    with _keys_lock:
        if kind not in _keys:
            if kind == "merchant_public":
                _keys[kind] = serialization.load_pem_public_key(
                    _pem("merchant_public.pem", "SANDBOX_V3_MCH_PUBLIC_KEY")
                )
            else:
                _keys[kind] = serialization.load_pem_private_key(
                    _pem("platform_private.pem", "SANDBOX_V3_PLATFORM_PRIVATE_KEY"), password=None
                )
        return _keys[kind]


def _mch_serial() -> str:
    return os.environ.get("SANDBOX_V3_MCH_SERIAL", DEMO_MCH_SERIAL)


def public_key_id() -> str:
    return os.environ.get("SANDBOX_V3_PUBLIC_KEY_ID", DEMO_PUBLIC_KEY_ID)


def apiv3_key() -> str:
    return os.environ.get("SANDBOX_V3_KEY", DEMO_APIV3_KEY)


def signed_headers(body: str) -> dict[str, str]:
    """WeChat's answer headers: the platform key's signature over ``TS\\nNONCE\\nBODY\\n``."""
    timestamp, nonce = str(int(time.time())), uuid.uuid4().hex
    signature = _key("platform_private").sign(
        f"{timestamp}\n{nonce}\n{body}\n".encode(), padding.PKCS1v15(), hashes.SHA256()
    )
    return {
        "Wechatpay-Timestamp": timestamp,
        "Wechatpay-Nonce": nonce,
        "Wechatpay-Signature": base64.b64encode(signature).decode(),
        "Wechatpay-Serial": public_key_id(),
        "Wechatpay-Signature-Type": "WECHATPAY2-SHA256-RSA2048",
        "Request-ID": uuid.uuid4().hex,
    }


def _answer(data: dict, status: int = 200, signed: bool = True) -> Response:
    body = json.dumps(data, ensure_ascii=False)
    headers = signed_headers(body) if signed else {}
    return Response(body, status=status, content_type=JSON, headers=headers)


def _error(status: int, code: str, message: str) -> Response:
    return _answer({"code": code, "message": message}, status, signed=False)


_AUTH = re.compile(r'(\w+)="([^"]*)"')


def check_signature(state: SandboxState, request: Request) -> str | None:
    """None if the request's Authorization verifies, else why not."""
    header = request.headers.get("Authorization", "")
    if not header.startswith("WECHATPAY2-SHA256-RSA2048 "):
        return "Authorization 缺失或签名方式不是 WECHATPAY2-SHA256-RSA2048"
    fields = dict(_AUTH.findall(header))
    if fields.get("mchid") != state.config.mch_id:
        return "mchid 与商户号不符"
    if fields.get("serial_no") != _mch_serial():
        return "商户证书序列号不符"
    try:
        if abs(time.time() - int(fields.get("timestamp", "0"))) > 300:
            return "timestamp 与当前时间相差超过 5 分钟"
    except ValueError:
        return "timestamp 无效"
    path = request.full_path.rstrip("?") if request.query_string else request.path
    message = (
        f"{request.method}\n{path}\n{fields.get('timestamp')}\n{fields.get('nonce_str')}\n"
        f"{request.get_data(as_text=True)}\n"
    )
    try:
        _key("merchant_public").verify(
            base64.b64decode(fields.get("signature", "")), message.encode(), padding.PKCS1v15(), hashes.SHA256()
        )
    except (InvalidSignature, ValueError):
        return "签名错误，请检查 Authorization 的 signature"
    return None


def owns(path: str) -> bool:
    return path.startswith("/v3/") or path.startswith("/sandbox/v3/") or path.rstrip("/") == "/wxa/getwxacodeunlimit"


def dispatch(state: SandboxState, request: Request) -> Response:
    """Answer one request under :func:`owns`."""
    path = request.path.rstrip("/")
    if path.startswith("/sandbox/v3/"):
        return _control(state, request, path[len("/sandbox/v3/") :])
    if path == "/wxa/getwxacodeunlimit":
        return wxacode_unlimit(state, request)
    with state.lock:
        # one count per API: numbers in a path become {no} (v3/pay/transactions/out-trade-no/{no}/close)
        name = re.sub(
            r"(/out-trade-no|/domestic/refunds)/[^/]+", r"\1/{no}", path[len("/v3") :].split("/out-bill-no/")[0]
        )
        state.api_calls["v3" + name] += 1
    why = check_signature(state, request)
    if why:
        return _error(401, "SIGN_ERROR", why)
    from . import pay_v3_trades  # JSAPI payments, refunds and bills; imports this module

    if pay_v3_trades.owns(path):
        return pay_v3_trades.dispatch(state, request, path)
    if path == BILLS and request.method == "POST":
        return _create(state, request)
    match = re.fullmatch(BILLS + r"/out-bill-no/([A-Za-z0-9]+)(/cancel)?", path)
    if match and request.method == "GET" and not match.group(2):
        bill = v3(state).bills.get(match.group(1))
        if bill is None:
            return _error(404, "NOT_FOUND", "记录不存在")
        return _answer(bill.to_dict())
    if match and request.method == "POST" and match.group(2):
        return _cancel(state, match.group(1))
    return _error(404, "NOT_FOUND", "无此接口")


def _take_fault(state: SandboxState, target: str) -> str | None:
    with state.lock:
        queue = v3(state).faults.get(target)
        return queue.pop(0) if queue else None


def _drop(request: Request) -> None:
    sock = request.environ.get("werkzeug.socket")
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    raise ConnectionAbortedError("sandbox fault: answer dropped")


def _create(state: SandboxState, request: Request) -> Response:
    try:
        body = json.loads(request.get_data(as_text=True))
    except ValueError:
        return _error(400, "PARAM_ERROR", "请求体不是 JSON")
    fault = _take_fault(state, "transfer_create")
    if fault == "system_error":
        return _error(500, "SYSTEM_ERROR", "系统繁忙，请稍后重试")
    if fault == "param_error":
        return _error(400, "PARAM_ERROR", "参数错误（沙箱故障）")
    if fault == "not_enough":
        return _error(403, "NOT_ENOUGH", "商户运营账户资金不足（沙箱故障）")
    required = ("appid", "out_bill_no", "transfer_scene_id", "openid", "transfer_amount", "transfer_remark")
    missing = [k for k in required if body.get(k) in (None, "")]
    if missing:
        return _error(400, "PARAM_ERROR", f"缺少参数 {', '.join(missing)}")
    if body["appid"] != state.config.appid:
        return _error(400, "APPID_MCHID_NOT_MATCH", "appid 与商户号不匹配")
    out_bill_no, amount = str(body["out_bill_no"]), body["transfer_amount"]
    if not re.fullmatch(r"[A-Za-z0-9]{5,32}", out_bill_no) or not isinstance(amount, int) or amount < 10:
        return _error(400, "PARAM_ERROR", "out_bill_no 或 transfer_amount 无效（最少 0.1 元）")
    if amount >= 200000 and not body.get("user_name"):
        return _error(400, "PARAM_ERROR", "2000 元及以上须传收款用户姓名 user_name")
    if len(str(body["transfer_remark"])) > 32:
        return _error(400, "PARAM_ERROR", "transfer_remark 超过 32 个字符")
    with state.lock:
        store = v3(state)
        store.creates[out_bill_no] += 1
        bill = store.bills.get(out_bill_no)
        if bill is None:
            now = wire.beijing().isoformat(timespec="seconds")
            bill = Bill(
                out_bill_no=out_bill_no,
                transfer_bill_no="1330" + secrets.token_hex(12).upper(),
                openid=str(body["openid"]),
                amount=amount,
                notify_url=str(body.get("notify_url") or ""),
                remark=str(body["transfer_remark"]),
                package_info="ABBQO+oYAAABAAAAAAAk" + secrets.token_urlsafe(24),
                create_time=now,
                update_time=now,
            )
            store.bills[out_bill_no] = bill
        elif bill.amount != amount or bill.openid != body["openid"]:
            return _error(400, "PARAM_ERROR", "同一 out_bill_no 的参数与原单不一致")
        answer = {
            "out_bill_no": bill.out_bill_no,
            "transfer_bill_no": bill.transfer_bill_no,
            "create_time": bill.create_time,
            "state": bill.state,
        }
        if bill.state == "WAIT_USER_CONFIRM":
            answer["package_info"] = bill.package_info
    if fault == "drop_answer":
        _drop(request)
    return _answer(answer)


def _cancel(state: SandboxState, out_bill_no: str) -> Response:
    with state.lock:
        bill = v3(state).bills.get(out_bill_no)
        if bill is None:
            return _error(404, "NOT_FOUND", "记录不存在")
        if bill.state in ("SUCCESS", "FAIL"):
            return _error(400, "INVALID_REQUEST", f"单据状态 {bill.state} 不能撤销")
        if bill.state != "CANCELLED":
            _finish(state, bill, "CANCELLED", "")
        return _answer(
            {
                "out_bill_no": bill.out_bill_no,
                "transfer_bill_no": bill.transfer_bill_no,
                "state": bill.state,
                "update_time": bill.update_time,
            }
        )


def _finish(state: SandboxState, bill: Bill, final: str, reason: str) -> None:
    """Move a bill to a final state and queue its notification (caller holds the lock)."""
    bill.state, bill.fail_reason = final, reason
    bill.update_time = wire.beijing().isoformat(timespec="seconds")
    if bill.notify_url:
        v3(state).pending.append(notification(bill, mch_id=state.config.mch_id))


def notification(bill: Bill, *, mch_id: str) -> dict:
    """The signed, encrypted ``MCHTRANSFER.BILL.FINISHED`` notification of a bill:
    ``{"url", "body", "headers", "out_bill_no"}``."""
    resource = {**bill.to_dict(), "mch_id": mch_id}
    resource.pop("transfer_remark", None)
    nonce, associated = secrets.token_hex(6), "mch_payment"
    cipher = AESGCM(apiv3_key().encode()).encrypt(
        nonce.encode(), json.dumps(resource, ensure_ascii=False).encode(), associated.encode()
    )
    envelope = {
        "id": str(uuid.uuid4()),
        "create_time": bill.update_time,
        "event_type": "MCHTRANSFER.BILL.FINISHED",
        "resource_type": "encrypt-resource",
        "summary": "商家转账单据终态通知",
        "resource": {
            "original_type": "mch_payment",
            "algorithm": "AEAD_AES_256_GCM",
            "ciphertext": base64.b64encode(cipher).decode(),
            "associated_data": associated,
            "nonce": nonce,
        },
    }
    body = json.dumps(envelope, ensure_ascii=False)
    return {
        "url": bill.notify_url,
        "body": body,
        "out_bill_no": bill.out_bill_no,
        "attempts": 0,
        "headers": {**signed_headers(body), "Content-Type": "application/json"},
    }


def _http(url: str, body: bytes, headers: dict) -> tuple[int, str]:
    response = requests.post(url, data=body, headers=headers, timeout=5, allow_redirects=False)
    return response.status_code, response.text


def deliver(state: SandboxState, due_only: bool = False) -> list[dict]:
    """POST every pending notification once (``due_only``: those whose retry is due, as the
    notifier thread does); acknowledged (HTTP 200/204) ones leave the queue, the others wait
    for the next retry on WeChat's (scaled) schedule, given up after the last."""
    store = v3(state)
    now = time.monotonic()
    with state.lock:
        pending = [n for n in store.pending if not due_only or n.get("due", 0) <= now]
        store.pending = [n for n in store.pending if n not in pending]
    results, again = [], []
    for note in pending:
        note["attempts"] += 1
        try:
            status, text = (store.transport or _http)(note["url"], note["body"].encode(), dict(note["headers"]))
        except Exception as exc:  # a failed attempt, as at WeChat
            status, text = 0, f"{type(exc).__name__}: {exc}"
        ok = status in (200, 204)
        keys = {k: note[k] for k in ("out_bill_no", "out_trade_no", "out_refund_no", "event_type") if k in note}
        results.append({**keys, "status": status, "ok": ok, "response": text[:500]})
        note.setdefault("answers", []).append({"status": status, "ok": ok, "response": text[:500]})
        delays = state.config.retry_delays()
        if ok:
            store.delivered.append(note)
        elif note["attempts"] <= len(delays):
            note["due"] = time.monotonic() + delays[note["attempts"] - 1]
            again.append(note)
    with state.lock:
        store.pending[:0] = again
    return results


def wxacode_unlimit(state: SandboxState, request: Request) -> Response:
    """``POST wxa/getwxacodeunlimit?access_token=`` -> a PNG, or a JSON error (41001/40001/
    42001 token, 47001 body, 40169 scene longer than 32)."""
    from .miniprogram import error, json_object

    with state.lock:
        state.api_calls["wxa/getwxacodeunlimit"] += 1
    token = request.args.get("access_token")
    status = state.token_status(token) if token else "missing"
    if status != "ok":
        code = {"missing": (41001, "access_token missing"), "expired": (42001, "access_token expired")}.get(
            status, (40001, "invalid credential, access_token is invalid or not latest")
        )
        return _answer(error(*code), signed=False)
    body = json_object(request.get_data())
    if body is None:
        return _answer(error(47001, "data format error"), signed=False)
    scene = body.get("scene")
    if not isinstance(scene, str) or not scene or len(scene) > 32:
        return _answer(error(40169, "invalid length for scene, or the data is not json string"), signed=False)
    buffer = io.BytesIO()
    segno.make(
        f"https://mp.weixin.qq.com/a/{state.config.appid}?scene={scene}&page={body.get('page', '')}", error="m"
    ).save(buffer, kind="png", scale=max(2, int(body.get("width") or 430) // 60))
    with state.lock:
        v3(state).codes.append({"scene": scene, "page": body.get("page", "")})
    return Response(buffer.getvalue(), content_type="image/png")


def _control(state: SandboxState, request: Request, tail: str) -> Response:
    store = v3(state)
    data = {}
    if request.method == "POST" and request.get_data().strip():
        try:
            data = json.loads(request.get_data(as_text=True))
        except ValueError:
            return _answer({"error": "body is not JSON"}, 400, signed=False)
    if tail == "transfers" and request.method == "GET":
        with state.lock:
            return _answer(
                {"bills": [b.to_dict() for b in store.bills.values()], "creates": dict(store.creates)}, signed=False
            )
    if tail == "faults" and request.method == "POST":
        with state.lock:
            for target, kind in data.items():
                if target == "times":
                    continue
                store.faults.setdefault(target, []).extend([kind] * int(data.get("times", 1)))
            return _answer({"faults": store.faults}, signed=False)
    if tail == "notifications" and request.method == "GET":
        with state.lock:
            return _answer({"notifications": [{k: v for k, v in n.items() if k != "headers"} for n in store.notes]})
    if tail == "notifications/deliver" and request.method == "POST":
        return _answer({"attempts": deliver(state)}, signed=False)
    match = re.fullmatch(r"transfers/([A-Za-z0-9]+)/confirm", tail)
    if match and request.method == "POST":
        result = data.get("result", "success")
        final = {"success": "SUCCESS", "fail": "FAIL", "cancel": "CANCELLED"}.get(result)
        with state.lock:
            bill = store.bills.get(match.group(1))
            if bill is None or final is None:
                return _answer({"error": "no such bill, or result not success/fail/cancel"}, 404, signed=False)
            if bill.state in STATES_FINAL:
                return _answer({"error": f"bill already {bill.state}"}, 409, signed=False)
            _finish(
                state,
                bill,
                final,
                ""
                if final == "SUCCESS"
                else str(data.get("fail_reason") or ("用户未确认" if final == "CANCELLED" else "ACCOUNT_FROZEN")),
            )
            answer = bill.to_dict()
        if data.get("notify", True):
            answer["notifications"] = deliver(state)
        return _answer(answer, signed=False)
    return _answer({"error": "unknown sandbox v3 control path"}, 404, signed=False)
