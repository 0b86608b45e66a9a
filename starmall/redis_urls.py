"""``REDIS_URL`` as a plain Redis or a Redis Sentinel group, turned into the settings of each client the
shop has: the cache (django-redis), the chat's channel layer (channels-redis), the Celery broker (kombu)
and beat's lock and schedule (celery-redbeat). Forms accepted:

- ``redis://[:password@]host:port/db``, ``rediss://...``, ``unix://path?db=0``: one server, passed to each
  client as it is (the broker gets a unix socket as kombu spells it, ``redis+socket://path?virtual_host=0``);
- ``sentinel://[:password@]host1:26379,host2:26379/<master name>[/<db>]``: every client asks the sentinels
  for the current master of ``<master name>`` and follows a failover; ``password`` is the Redis servers'
  (the sentinels get none unless ``?sentinel_password=...``). :func:`parse` raises ValueError if malformed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, unquote, urlsplit


@dataclass(frozen=True)
class Sentinel:
    """A parsed ``sentinel://`` URL: ``sentinels`` ``[(host, port), ...]``, ``master`` (the
    monitored master's name), ``db``, the Redis ``password`` and the sentinels' own."""

    sentinels: list[tuple[str, int]]
    master: str
    db: int = 0
    password: str | None = None
    sentinel_password: str | None = None
    extra: dict = field(default_factory=dict)


def parse(url: str) -> Sentinel | None:
    """The Sentinel group ``url`` names, or None for a plain Redis URL (see module docstring)."""
    if not url.startswith("sentinel://"):
        return None
    parts = urlsplit(url)
    netloc = parts.netloc
    password = None
    if "@" in netloc:
        credentials, netloc = netloc.rsplit("@", 1)
        password = unquote(credentials.split(":", 1)[1] if ":" in credentials else credentials) or None
    sentinels = []
    for item in netloc.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"REDIS_URL: sentinel {item!r} is not host:port")
        sentinels.append((host.strip("[]"), int(port)))
    path = [p for p in parts.path.split("/") if p]
    if not path or len(path) > 2:
        raise ValueError(
            "REDIS_URL: a Sentinel URL ends in /<master name>[/<db>], e.g. sentinel://h1:26379,h2:26379/mymaster/0"
        )
    if len(path) == 2 and not path[1].isdigit():
        raise ValueError(f"REDIS_URL: database {path[1]!r} is not a number")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    return Sentinel(
        sentinels=sentinels,
        master=unquote(path[0]),
        db=int(path[1]) if len(path) == 2 else 0,
        password=password,
        sentinel_password=query.get("sentinel_password") or None,
    )


def cache_settings(url: str) -> tuple[str, dict]:
    """``(LOCATION, extra OPTIONS)`` of the django-redis cache for ``url``."""
    group = parse(url)
    if group is None:
        return url, {}
    options = {
        "CLIENT_CLASS": "starmall.cache_client.ProcessWideSentinelClient",
        "CONNECTION_FACTORY": "django_redis.pool.SentinelConnectionFactory",
        "SENTINELS": group.sentinels,
        "SENTINEL_KWARGS": {"password": group.sentinel_password} if group.sentinel_password else {},
    }
    if group.password:
        options["PASSWORD"] = group.password
    return f"redis://{quote(group.master, safe='')}/{group.db}", options


def channel_layer_host(url: str) -> dict:
    """One entry of channels-redis's ``hosts`` for ``url`` (without timeouts)."""
    group = parse(url)
    if group is None:
        return {"address": url}
    host = {"master_name": group.master, "sentinels": group.sentinels, "db": group.db}
    if group.password:
        host["password"] = group.password
    if group.sentinel_password:
        host["sentinel_kwargs"] = {"password": group.sentinel_password}
    return host


def broker_settings(url: str) -> tuple[str, dict]:
    """``(broker_url, extra broker_transport_options)`` of kombu for ``url``: a Sentinel group
    becomes kombu's ``sentinel://h1:p1;sentinel://h2:p2`` with ``master_name``."""
    if url.startswith("unix://"):
        return _socket_broker(url), {}
    group = parse(url)
    if group is None:
        return url, {}
    auth = f":{quote(group.password, safe='')}@" if group.password else ""
    broker = ";".join(f"sentinel://{auth}{host}:{port}/{group.db}" for host, port in group.sentinels)
    options = {"master_name": group.master}
    if group.sentinel_password:
        options["sentinel_kwargs"] = {"password": group.sentinel_password}
    return broker, options


def _socket_broker(url: str) -> str:
    """kombu's ``redis+socket://[:password@]/path?virtual_host=<db>`` for redis-py's
    ``unix://[:password@]/path?db=<db>[&password=...]`` (kombu has no ``unix`` transport)."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    password = unquote(parts.password) if parts.password else query.get("password", [None])[0]
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"redis+socket://{auth}{parts.path}?virtual_host={query.get('db', ['0'])[0]}"


def redbeat_settings(url: str) -> tuple[str, dict]:
    """``(redbeat_redis_url, redbeat_redis_options)`` of celery-redbeat for ``url``."""
    group = parse(url)
    if group is None:
        return url, {}
    options = {"sentinels": group.sentinels, "service_name": group.master, "db": group.db}
    if group.password:
        options["password"] = group.password
    if group.sentinel_password:
        options["sentinel_kwargs"] = {"password": group.sentinel_password}
    return "redis-sentinel://", options
