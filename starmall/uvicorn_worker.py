"""gunicorn's worker class for the shop: uvicorn serving ``starmall.asgi.application``.

``starmall/gunicorn_conf.py`` names it, so gunicorn keeps what it does well (process
management, restarts, timeouts, ``WEB_BIND``, ``WEB_WORKERS``) while each worker speaks HTTP and
WebSocket on the same port. ``lifespan`` is on: at start-up the ASGI gates open their Redis and
PostgreSQL connections, at shut-down they close them (``starmall.asgi.lifespan``).

Proxy headers follow ``TRUSTED_PROXIES`` (``starmall/proxies.py``), the list the app uses too:
uvicorn's default (on, believing 127.0.0.1) rewrote the client address from any
``X-Forwarded-For`` a local client sent, before the app could ignore it — a new header per
request walked past the login throttle. Empty list: off; else on, believing only those.
"""

import logging
import re

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


class ShopUvicornWorker(UvicornWorker):
    CONFIG_KWARGS = {"loop": "auto", "http": "auto", "ws": "auto", "lifespan": "on"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # No access log configured (WEB_ACCESS_LOG empty): uvicorn then builds no record at all.
        self.config.access_log = bool(self.cfg.accesslog)
        trusted = proxies.from_environ()  # read by Config.load(), when the worker starts serving
        self.config.proxy_headers = bool(trusted)
        self.config.forwarded_allow_ips = trusted
        for name in ("uvicorn.access", "uvicorn.error"):
            logging.getLogger(name).addFilter(RedactTokens())
