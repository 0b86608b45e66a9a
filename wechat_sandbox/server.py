"""Run the sandbox in a background thread (tests) or in the foreground (the CLI)."""

from __future__ import annotations

import logging
import threading

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from .app import SandboxApp
from .config import SandboxConfig
from .notifier import Notifier
from .state import SandboxState, Transport

log = logging.getLogger("wechat_sandbox")


class _QuietHandler(WSGIRequestHandler):
    """Request log lines go to the ``werkzeug`` logger at DEBUG only when asked for."""

    def log_request(self, code="-", size="-") -> None:
        if log.isEnabledFor(logging.DEBUG):
            super().log_request(code, size)


class SandboxServer:
    """A threaded WeChat sandbox on ``host:port`` (port 0: a free port), plus its notifier.

    Usage::

        with SandboxServer(config=SandboxConfig(retry_scale=0.001)) as sandbox:
            pay = WeChatPay(appid, api_key, mch_id, timeout=5)
            pay.API_BASE_URL = sandbox.url
            ...
            sandbox.state.trades["SM1"].trade_state

    Args:
        config: credentials and timings (default: the demo config).
        host, port: where to listen; ``url`` is ``http://host:port/``.
        auto_notify: deliver notices from a background thread (else only ``deliver_pending``).
        transport: notice transport ``(url, body) -> (status, text)`` (default: HTTP).
        quiet: keep werkzeug's per-request log lines out (default True; the CLI shows them).
    """

    def __init__(
        self,
        config: SandboxConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        auto_notify: bool = True,
        transport: Transport | None = None,
        quiet: bool = True,
    ) -> None:
        self.state = SandboxState(config or SandboxConfig(), transport=transport)
        self.app = SandboxApp(self.state)
        self.host = host
        self.auto_notify = auto_notify
        self.notifier = Notifier(self.state)
        self._server: BaseWSGIServer = make_server(
            host,
            port,
            self.app,
            threaded=True,
            request_handler=_QuietHandler if quiet else WSGIRequestHandler,
        )
        self.port: int = self._server.server_port
        self._thread: threading.Thread | None = None

    @property
    def config(self) -> SandboxConfig:
        return self.state.config

    @property
    def url(self) -> str:
        """Base URL ending in ``/``, for wechatpy's ``API_BASE_URL``."""
        return f"http://{self.host}:{self.port}/"

    @property
    def control(self):
        """A :class:`~wechat_sandbox.client.SandboxControl` for this server."""
        from .client import SandboxControl

        return SandboxControl(self.url)

    def start(self) -> SandboxServer:
        """Serve in a daemon thread (and start the notifier if ``auto_notify``)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"wechat-sandbox-{self.port}",
                daemon=True,
            )
            self._thread.start()
            if self.auto_notify:
                self.notifier.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (the CLI)."""
        if self.auto_notify:
            self.notifier.start()
        try:
            self._server.serve_forever()
        finally:
            self.notifier.stop()
            self._server.server_close()

    def stop(self) -> None:
        """Stop the notifier and the server, and free the port."""
        self.notifier.stop()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def deliver_pending(self, transport: Transport | None = None) -> list[dict]:
        """Shortcut for ``state.deliver_pending(transport)``."""
        return self.state.deliver_pending(transport)

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
