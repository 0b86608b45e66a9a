"""Helpers shared by the sandbox tests (imported by name: this directory has no __init__)."""

from __future__ import annotations

import threading

from wechatpy.pay import WeChatPay
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from wechat_sandbox import DEMO_APPID, DEMO_MCH_ID, DEMO_PAY_API_KEY

OK_XML = "<xml><return_code><![CDATA[SUCCESS]]></return_code><return_msg><![CDATA[OK]]></return_msg></xml>"
FAIL_XML = "<xml><return_code><![CDATA[FAIL]]></return_code><return_msg><![CDATA[busy]]></return_msg></xml>"
NOTIFY_URL = "http://shop.invalid/api/v1/payments/wechat/notify"
REFUND_NOTIFY_URL = "http://shop.invalid/api/v1/payments/wechat/refund-notify"


def make_pay(
    url: str,
    api_key: str = DEMO_PAY_API_KEY,
    cert: tuple[str, str] | None = None,
    appid: str = DEMO_APPID,
    mch_id: str = DEMO_MCH_ID,
    timeout: float = 5,
):
    """wechatpy's client, pointed at the sandbox the way the shop does it."""
    client = WeChatPay(
        appid, api_key, mch_id, mch_cert=cert[0] if cert else None, mch_key=cert[1] if cert else None, timeout=timeout
    )
    client.API_BASE_URL = url
    return client


def create_order(
    client, out_trade_no: str, total_fee: int = 100, openid: str = "oTestUser", notify_url: str = NOTIFY_URL, **extra
) -> dict:
    """``order.create`` with the shop's arguments (client_ip always given)."""
    return client.order.create(
        trade_type="JSAPI",
        body="Starmall-测试商品",
        total_fee=total_fee,
        notify_url=notify_url,
        client_ip="127.0.0.1",
        user_id=openid,
        out_trade_no=out_trade_no,
        **extra,
    )


def paid_order(client, sandbox, out_trade_no: str, total_fee: int = 100, **extra) -> dict:
    """Create and pay an order; returns the trade (control API view)."""
    create_order(client, out_trade_no, total_fee=total_fee, **extra)
    return sandbox.control.pay(out_trade_no)


class Recorder:
    """A notification transport that records calls and answers from a script (then OK)."""

    def __init__(self, *answers: tuple[int, str]) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()

    def __call__(self, url: str, body: bytes) -> tuple[int, str]:
        with self.lock:
            self.calls.append((url, body))
            answer = self.answers.pop(0) if self.answers else (200, OK_XML)
        if isinstance(answer, Exception):
            raise answer
        return answer


class ShopStub:
    """A real HTTP endpoint standing in for the shop's notify URL."""

    def __init__(self, answers: list[tuple[int, str]] | None = None) -> None:
        self.answers = list(answers or [])
        self.bodies: list[bytes] = []
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}/notify"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def _app(self, environ, start_response):
        request = Request(environ)
        self.bodies.append(request.get_data())
        status, text = self.answers.pop(0) if self.answers else (200, OK_XML)
        return Response(text, status=status, content_type="text/xml")(environ, start_response)

    def __enter__(self) -> ShopStub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
