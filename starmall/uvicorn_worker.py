"""gunicorn's worker class for the shop: uvicorn serving ``starmall.asgi.application``.

``starmall/gunicorn_conf.py`` names it, so gunicorn keeps what it does well (process management,
restarts, timeouts, ``WEB_BIND``, ``WEB_WORKERS``) while each worker speaks HTTP and WebSocket on the
same port. ``lifespan`` is on: the ASGI gates open their connections at start-up and close them at
shut-down (``starmall.asgi.lifespan``). Proxy headers follow ``TRUSTED_PROXIES`` (``starmall/proxies.py``),
the list the app uses too: off when it is empty, else on, believing only those. HTTP is uvicorn's
httptools protocol with one change (:class:`OneWriteHttpToolsProtocol`): a response's head goes out in the
same ``send`` as its body (the storm's requests/s up by two thirds: docs/PERFORMANCE.md, "One write per response").
"""

import logging
import re

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn_worker import UvicornWorker

from starmall import proxies

_TOKEN = re.compile(r"(token=)[^&\s]+")


class RedactTokens(logging.Filter):
    """Log lines never carry an API token: a chat socket's URL is
    ``/ws/chat/{id}?token=<token>`` (``wx.connectSocket`` cannot send headers), logged as
    ``token=***``. Works on uvicorn's access records and on its error logger's WebSocket
    handshake lines (``"WebSocket <path>" [accepted]`` / ``403``), whose ``args`` hold the path."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_TOKEN.sub(r"\1***", a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.msg, str):
            record.msg = _TOKEN.sub(r"\1***", record.msg)
        return True


class OneWrite:
    """A request's transport that sends the response head with the body's first bytes.

    uvicorn writes the head when the app sends ``http.response.start`` and the body when it
    sends ``http.response.body``: two ``send`` calls, two TCP segments, two wake-ups of the
    client, for every response. Held here, the head goes out in the body's first write, or
    alone when the response ends without one (a HEAD's) or the connection closes. What is
    written before the response starts (``100 Continue``) or after its head passes at once.
    """

    __slots__ = ("_done", "_head", "_state", "_transport", "_cycle")

    HEAD_DUE, HEAD_HELD, PASSING = 0, 1, 2

    def __init__(self, cycle) -> None:
        """Take over ``cycle``'s transport and its end-of-response callback."""
        self._transport, self._cycle, self._done = cycle.transport, cycle, cycle.on_response
        self._head, self._state = b"", self.HEAD_DUE
        cycle.transport, cycle.on_response = self, self._response_done

    def write(self, data: bytes) -> None:
        if self._state == self.HEAD_DUE and self._cycle.response_started:
            self._head, self._state = data, self.HEAD_HELD
        elif self._state == self.HEAD_HELD:
            self._state = self.PASSING
            self._transport.write(self._head + data)
            self._head = b""
        else:
            self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name):  # is_closing, get_extra_info, ...: the transport's own
        return getattr(self._transport, name)

    def _flush(self) -> None:
        if self._state == self.HEAD_HELD:
            self.write(b"")

    def _response_done(self) -> None:
        self._flush()
        self._done()


class OneWriteHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, each request's response written through :class:`OneWrite`."""

    def on_headers_complete(self) -> None:
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:  # a new request (not a WebSocket's upgrade); its task has not run yet
            OneWrite(self.cycle)


class ShopUvicornWorker(UvicornWorker):
    CONFIG_KWARGS = {
        "loop": "auto",
        "http": "starmall.uvicorn_worker:OneWriteHttpToolsProtocol",
        "ws": "auto",
        "lifespan": "on",
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # No access log configured (WEB_ACCESS_LOG empty): uvicorn then builds no record at all.
        self.config.access_log = bool(self.cfg.accesslog)
        trusted = proxies.from_environ()  # read by Config.load(), when the worker starts serving
        # Not uvicorn's default (on, believing 127.0.0.1): it would rewrite the address from any
        # X-Forwarded-For a local client sent, before the app could ignore it, and a new header per
        # request would walk past the login throttle.
        self.config.proxy_headers = bool(trusted)
        self.config.forwarded_allow_ips = trusted
        for name in ("uvicorn.access", "uvicorn.error"):
            logging.getLogger(name).addFilter(RedactTokens())
