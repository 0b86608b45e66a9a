"""ASGI entry point: ONE host and port for the API (HTTP) and the chat (WebSocket), as the mini-program's
``wx.connectSocket`` talks to the API's own domain; run by gunicorn's uvicorn workers (``starmall/gunicorn_conf.py``).

- ``http``: Django's WSGI application in a2wsgi's thread pool (``WEB_THREADS`` threads per process),
  behind ``OrderGate`` and ``PaymentNotifyGate``: each answers its own paths before Django and passes
  every other request on untouched, so their order does not matter (docs/GATES.md).
- ``lifespan``: the gates open their connections at the worker's start and close them at its end.
- ``websocket``: the chat consumer (``apps.chat.routing``), its groups on the Redis channel layer; any
  other path is refused before the handshake completes (HTTP 403).
"""

import logging
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")

from a2wsgi import WSGIMiddleware  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

wsgi_application = get_wsgi_application()  # sets Django up before the consumers are imported

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from apps.chat.routing import websocket_urlpatterns  # noqa: E402
from starmall.gates.orders import OrderGate  # noqa: E402
from starmall.gates.payment_notify import PaymentNotifyGate  # noqa: E402

logger = logging.getLogger(__name__)


async def websocket_not_found(scope, receive, send):
    """ASGI app for a WebSocket to a path no route takes: close before accepting.

    ASGI's ``websocket.close`` in answer to ``websocket.connect`` rejects the handshake (uvicorn
    answers HTTP 403). One info line names the path (never the query string: a chat token
    travels there).
    """
    message = await receive()
    if message["type"] == "websocket.connect":
        logger.info("WebSocket refused: no route for %r", scope["path"])
        await send({"type": "websocket.close", "code": 1008})  # 1008: policy violation


# WSGI through a2wsgi's real thread pool, not Django's ASGI handler: that one runs sync views one
# at a time per process (``thread_sensitive``), which would serialise the flash sale.
http_application = PaymentNotifyGate(
    OrderGate(WSGIMiddleware(wsgi_application, workers=int(os.environ.get("WEB_THREADS", "4"))))
)
gates = (http_application, http_application.app)  # what lifespan warms and closes


async def lifespan(scope, receive, send):
    """ASGI lifespan: at the worker's start the gates open their Redis and PostgreSQL
    connections (a 秒杀 opening or a notification storm right after a deploy does not wait for
    connecting; never fails the start: ``RedisGate.warm``, ``postgres.Database.warm``); at its
    end they push what is due and close them."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            try:
                for gate in gates:
                    await gate.warm()
            except Exception:  # noqa: BLE001 - a warm-up is an optimisation: serve anyway
                logger.warning("the gates could not warm up", exc_info=True)
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            try:
                for gate in gates:
                    await gate.aclose()
            except Exception:  # noqa: BLE001 - shutting down regardless
                logger.warning("the gates did not close cleanly", exc_info=True)
            await send({"type": "lifespan.shutdown.complete"})
            return


application = ProtocolTypeRouter(
    {
        "http": http_application,
        # The catch-all route: without it URLRouter raises ValueError("No route found"), which
        # uvicorn answers with a 500 and a logged traceback per attempt.
        "websocket": URLRouter([*websocket_urlpatterns, re_path(r"", websocket_not_found)]),
        "lifespan": lifespan,
    }
)
