"""gunicorn's worker class for the shop: uvicorn serving ``starmall.asgi.application``.

``starmall/gunicorn_conf.py`` names it, so gunicorn keeps what it does well (process
management, restarts, timeouts, ``WEB_BIND``, ``WEB_WORKERS``) while each worker speaks HTTP and
WebSocket on the same port. ``lifespan`` is off: the application has no start-up or shut-down
hooks (Channels' ProtocolTypeRouter does not route ``lifespan``).
"""

from uvicorn_worker import UvicornWorker


class ShopUvicornWorker(UvicornWorker):
    CONFIG_KWARGS = {"loop": "auto", "http": "auto", "ws": "auto", "lifespan": "off"}
