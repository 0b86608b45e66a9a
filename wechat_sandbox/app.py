"""The sandbox's WSGI application: WeChat's API paths plus the ``/sandbox/`` control API.

Paths are those of WeChat's hosts (``api.mch.weixin.qq.com`` for Pay, ``api.weixin.qq.com``
for the mini-program APIs) served from one base URL, so a shop points wechatpy's
``API_BASE_URL`` (and ``WeChatClient``'s) at ``http://host:port/``.
"""

from __future__ import annotations

import json
import logging
import socket
import time

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from . import control, logistics, miniprogram, official, pay, pay_v3, phone, printing, robot, shipping, sms
from .faults import API_ENDPOINTS
from .state import SandboxError, SandboxState

log = logging.getLogger("wechat_sandbox")

PAY_ENDPOINTS = tuple(pay.ENDPOINTS)
EXTRA_MODULES = {"official": official, "sms": sms, "phone": phone, "shipping": shipping, "printing": printing}
MAX_BODY_BYTES = 1024 * 1024
XML = "text/xml; charset=utf-8"
JSON = "application/json; charset=utf-8"


def json_response(data: object, status: int = 200, pretty: bool = False) -> Response:
    text = json.dumps(data, ensure_ascii=False, indent=1 if pretty else None)
    return Response(text, status=status, content_type=JSON)


class SandboxApp:
    """WSGI callable. ``state`` is shared with the notifier and the tests."""

    def __init__(self, state: SandboxState) -> None:
        self.state = state
        rules = [Rule("/" + name, endpoint=name) for name in API_ENDPOINTS]
        # official account, Tencent SMS, phone numbers, the shipping information's control API,
        # the receipt printer and electronic waybills (printing.py)
        extra = official.rules() + sms.rules() + phone.rules() + shipping.rules() + printing.rules()
        self.url_map = Map(rules + control.rules() + logistics.rules() + extra, strict_slashes=False)

    def __call__(self, environ, start_response):
        request = Request(environ)
        request.max_content_length = MAX_BODY_BYTES
        response = self.dispatch(request)
        return response(environ, start_response)

    def dispatch(self, request: Request) -> Response:
        if pay_v3.owns(request.path):  # Pay API v3 transfers and mini-program codes (pay_v3.py)
            return pay_v3.dispatch(self.state, request)
        adapter = self.url_map.bind_to_environ(request.environ)
        try:
            endpoint, values = adapter.match()
        except HTTPException as exc:
            if request.path.startswith("/sandbox/"):
                return json_response({"error": exc.description}, exc.code or 404)
            return exc.get_response(request.environ)
        try:
            if endpoint.startswith("logistics:"):  # Kuaidi100-shaped tracking (logistics.py)
                return logistics.handle(self.state, request, endpoint.split(":", 1)[1])
            prefix, _, rest = endpoint.partition(":")
            if prefix in EXTRA_MODULES:  # official.py, sms.py, phone.py, printing.py: each handles its own paths
                return EXTRA_MODULES[prefix].handle(self.state, request, rest)
            if endpoint.startswith("control:"):
                return self._control(endpoint.split(":", 1)[1], request, values)
            return self._api(endpoint, request)
        except HTTPException as exc:  # e.g. 413 body too large
            return exc.get_response(request.environ)

    # --- control API ------------------------------------------------------------------------

    def _control(self, name: str, request: Request, values: dict) -> Response:
        try:
            return json_response(control.HANDLERS[name](self.state, request, **values), pretty=True)
        except SandboxError as exc:
            return json_response({"error": exc.message}, exc.status, pretty=True)

    # --- WeChat APIs, with faults ------------------------------------------------------------

    def _api(self, name: str, request: Request) -> Response:
        with self.state.lock:
            self.state.api_calls[name] += 1  # how often the shop called each API (tests assert it)
        fault = self.state.faults.take(name) or {}
        if name in PAY_ENDPOINTS:
            response = self._pay(name, request, fault)
        elif name == "cgi-bin/webhook/send":
            response = self._robot(request, fault)
        else:
            response = self._miniprogram(name, request, fault)
        if fault.get("delay_seconds"):
            time.sleep(float(fault["delay_seconds"]))
        drop = fault.get("drop")
        if drop in (True, "close"):
            sock = request.environ.get("werkzeug.socket")
            if sock is not None:
                log.info("fault: dropping the connection of %s", name)
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                # werkzeug's server treats ConnectionError as "client went away": no answer.
                raise ConnectionAbortedError(f"sandbox fault: {name} dropped")
            drop = "500"  # not under werkzeug's server: the nearest thing is an error status
        if drop in ("500", 500):
            return Response("Internal Server Error", status=500, content_type="text/plain")
        return response

    def _pay(self, name: str, request: Request, fault: dict) -> Response:
        if request.method != "POST":
            body = pay.return_fail(pay.ReturnFail("请使用post方法"))
            return Response(body, content_type=XML)
        forced = None
        if fault.get("system_error") or fault.get("err_code"):
            code = fault.get("err_code") or "SYSTEMERROR"
            forced = pay.PayError(code, "系统超时" if code == "SYSTEMERROR" else f"{code}(沙箱故障)")
        body, content_type = pay.handle(self.state, name, request.get_data(), forced)
        return Response(body, content_type=content_type)

    def _robot(self, request: Request, fault: dict) -> Response:
        """The enterprise-WeChat group robot (robot.py); faults answer as WeCom would."""
        if fault.get("rate_limit"):
            return json_response(robot.error(45009, "api freq out of limit"))
        if fault.get("system_error") or fault.get("err_code"):
            return json_response(robot.error(-1, "system error"))
        return json_response(robot.send(self.state, request.args.get("key"), request.get_data(), request.method))

    def _miniprogram(self, name: str, request: Request, fault: dict) -> Response:
        if fault.get("rate_limit"):
            return json_response(
                miniprogram.error(45011, "api minute-quota reach limit  mustslower  retry next minute")
            )
        if fault.get("system_error") or fault.get("err_code"):
            return json_response(miniprogram.error(-1, "system error"))
        if fault.get("errcode"):
            return json_response(miniprogram.error(int(fault["errcode"]), "sandbox fault"))
        args = request.args.to_dict()
        self.state.tick()
        if name == "sns/jscode2session":
            return json_response(miniprogram.jscode2session(self.state, args))
        if name == "cgi-bin/token":
            if official.is_official(args):  # the official account's own appid and secret
                return json_response(official.token(self.state, args))
            return json_response(miniprogram.token(self.state, args))
        if request.method != "POST":
            return json_response(miniprogram.error(43002, "require POST method"))
        if name in shipping.ENDPOINTS:  # 小程序发货信息管理 (shipping.py)
            return json_response(shipping.api(self.state, name, args.get("access_token"), request.get_data()))
        return json_response(miniprogram.subscribe_send(self.state, args.get("access_token"), request.get_data()))
