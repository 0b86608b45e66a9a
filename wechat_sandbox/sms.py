"""A Tencent Cloud SMS sandbox (API 3.0 ``SendSms``, version 2021-01-11), served at
``POST /tencent-sms/`` by the WeChat sandbox's process, so the shop's
``apps.accounts.sms.TencentSmsBackend`` has a provider in ``make run`` and the tests.

Every request is checked as Tencent does: ``X-TC-Action`` SendSms, ``X-TC-Version``,
``X-TC-Timestamp`` within 5 minutes, and the ``Authorization`` header's TC3-HMAC-SHA256
signature with :data:`SECRET_ID` / :data:`SECRET_KEY` (the shop's sandbox defaults). Answers
``{"Response": {"SendStatusSet": [{"SerialNo", "PhoneNumber", "Fee": 1, "SessionContext",
"Code": "Ok", "Message": "send success", "IsoCode": "CN"}], "RequestId"}}`` or ``{"Response":
{"Error": {"Code", "Message"}, "RequestId"}}`` (AuthFailure.SecretIdNotFound,
AuthFailure.SignatureFailure, AuthFailure.SignatureExpire, InvalidParameterValue.*,
FailedOperation.*). Control: ``GET /sandbox/sms`` lists the accepted messages (the template
parameters hold a verification code: tests read it there), ``DELETE`` forgets them;
``POST /sandbox/sms {"down": true}`` answers every send with FailedOperation (an outage).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import secrets
import time
import uuid

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

SECRET_ID = "AKIDstarmallSandbox0000000000000000"
SECRET_KEY = "starmallSandboxSecretKey00000000"
SDK_APP_ID = "1400000000"


def rules() -> list[Rule]:
    return [
        Rule("/tencent-sms/", endpoint="sms:send", methods=["POST"]),
        Rule("/sandbox/sms", endpoint="sms:control", methods=["GET", "POST", "DELETE"]),
    ]


def _st(state) -> dict:
    return state.extras.setdefault("sms", {"messages": [], "down": False})


def _json(data: object, status: int = 200) -> Response:
    return Response(json.dumps(data, ensure_ascii=False), status=status, content_type="application/json; charset=utf-8")


def _error(code: str, message: str) -> dict:
    return {"Response": {"Error": {"Code": code, "Message": message}, "RequestId": str(uuid.uuid4())}}


def signature(*, secret_key: str, host: str, path: str, payload: bytes, timestamp: int, content_type: str) -> str:
    """TC3-HMAC-SHA256 over the canonical request (content-type and host signed)."""
    date = dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d")
    canonical = "\n".join(
        [
            "POST",
            path,
            "",
            f"content-type:{content_type}\nhost:{host}\n",
            "content-type;host",
            hashlib.sha256(payload).hexdigest(),
        ]
    )
    to_sign = "\n".join(
        ["TC3-HMAC-SHA256", str(timestamp), f"{date}/sms/tc3_request", hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = ("TC3" + secret_key).encode()
    for part in (date, "sms", "tc3_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def handle(state, request: Request, name: str) -> Response:
    if name == "control":
        with state.lock:
            st = _st(state)
            if request.method == "DELETE":
                st["messages"].clear()
            elif request.method == "POST":
                st["down"] = bool((json.loads(request.get_data() or b"{}") or {}).get("down"))
            return _json({"down": st["down"], "messages": list(st["messages"])})
    return _json(send(state, request))


def send(state, request: Request) -> dict:
    """One ``SendSms`` call (module docstring)."""
    headers = request.headers
    if headers.get("X-TC-Action") != "SendSms" or headers.get("X-TC-Version") != "2021-01-11":
        return _error("InvalidAction", "The requested action does not exist.")
    auth = headers.get("Authorization", "")
    try:
        credential = auth.split("Credential=", 1)[1].split(",", 1)[0]
        secret_id, date, service, _ = credential.split("/")
        given = auth.split("Signature=", 1)[1].strip()
        timestamp = int(headers.get("X-TC-Timestamp", ""))
    except (IndexError, ValueError):
        return _error("AuthFailure.SignatureFailure", "The provided credentials could not be validated.")
    if secret_id != SECRET_ID:
        return _error("AuthFailure.SecretIdNotFound", "The SecretId is not found.")
    if abs(time.time() - timestamp) > 300:
        return _error("AuthFailure.SignatureExpire", "Signature expired.")
    expected = signature(
        secret_key=SECRET_KEY,
        host=headers.get("Host", ""),
        path=request.path,
        payload=request.get_data(),
        timestamp=timestamp,
        content_type=headers.get("Content-Type", ""),
    )
    if service != "sms" or not hmac.compare_digest(expected, given):
        return _error("AuthFailure.SignatureFailure", "The provided credentials could not be validated.")
    try:
        body = json.loads(request.get_data())
        numbers = body["PhoneNumberSet"]
    except (ValueError, KeyError, TypeError):
        return _error("InvalidParameter", "PhoneNumberSet is required.")
    if body.get("SmsSdkAppId") != SDK_APP_ID:
        return _error("InvalidParameterValue.SdkAppIdNotExist", "SdkAppId does not exist.")
    if not body.get("SignName") or not body.get("TemplateId"):
        return _error("InvalidParameterValue.ContentLengthLimit", "SignName and TemplateId are required.")
    if (
        not isinstance(numbers, list)
        or not numbers
        or not all(isinstance(n, str) and n.startswith("+") for n in numbers)
    ):
        return _error("InvalidParameterValue.IncorrectPhoneNumber", "The phone number is incorrect.")
    with state.lock:
        st = _st(state)
        if st["down"]:
            return _error("FailedOperation.PhoneNumberInBlacklist", "sandbox outage")
        out = []
        for number in numbers:
            serial = f"2433:{secrets.randbelow(10**20):020d}"
            st["messages"].append(
                {
                    "phone": number,
                    "sign_name": body["SignName"],
                    "template_id": body["TemplateId"],
                    "params": list(body.get("TemplateParamSet") or []),
                    "session_context": body.get("SessionContext", ""),
                    "serial_no": serial,
                    "at": time.time(),
                }
            )
            out.append(
                {
                    "SerialNo": serial,
                    "PhoneNumber": number,
                    "Fee": 1,
                    "SessionContext": body.get("SessionContext", ""),
                    "Code": "Ok",
                    "Message": "send success",
                    "IsoCode": "CN",
                }
            )
    return {"Response": {"SendStatusSet": out, "RequestId": str(uuid.uuid4())}}
