"""Parcel tracking behind one interface, cached; Kuaidi100's real-time query as the provider.

``tracking_get(carrier_code, tracking_no, phone)`` is what the shop calls: it answers from the
cache (``LOGISTICS_CACHE_SECONDS``, 10 minutes) or asks the provider named by
``LOGISTICS_PROVIDER`` (a dotted path to a :class:`TrackingProvider`). The default,
:class:`Kuaidi100Provider`, queries ``LOGISTICS_API_BASE``: ``wechat_sandbox/logistics.py`` in
development and tests, ``https://poll.kuaidi100.com/`` in production (``LOGISTICS_CUSTOMER`` /
``LOGISTICS_KEY``). A provider that cannot answer raises :class:`LogisticsUnavailable` (503).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field

import requests
from django.conf import settings
from django.core.cache import cache
from django.utils.module_loading import import_string

from starmall.errors import ServiceUnavailable, backend_errors

logger = logging.getLogger(__name__)


class LogisticsUnavailable(ServiceUnavailable):
    """The tracking provider is down or refused the query (503 ``service_unavailable``)."""

    message = "物流信息暂时无法查询，请稍后再试。"


# Kuaidi100 ``state`` -> the API's ``state``.
STATES = {
    "0": "in_transit",
    "1": "collected",
    "2": "problem",
    "3": "signed",
    "4": "returned_signed",
    "5": "delivering",
    "6": "returning",
    "7": "forwarded",
    "8": "customs",
    "14": "rejected",
}


@dataclass
class Tracking:
    """A parcel's route: ``state`` (see STATES; ``unknown`` when the provider has nothing yet)
    and ``events`` newest first, ``[{"time": "YYYY-MM-DD HH:MM:SS" (Shanghai), "text"}]``."""

    state: str
    events: list[dict] = field(default_factory=list)


class TrackingProvider:
    """Interface: ``query(com, num, phone)`` -> Tracking; raises LogisticsUnavailable."""

    def query(self, *, com: str, num: str, phone: str = "") -> Tracking:  # pragma: no cover - interface
        raise NotImplementedError


class Kuaidi100Provider(TrackingProvider):
    """Kuaidi100 real-time query (``POST {base}poll/query.do``, form ``customer``, ``sign`` =
    upper(MD5(param + key + customer)), ``param`` JSON). SF needs the receiver's phone."""

    def query(self, *, com: str, num: str, phone: str = "") -> Tracking:
        param = json.dumps({"com": com, "num": num, "phone": phone, "resultv2": "0"}, separators=(",", ":"))
        customer, key = settings.LOGISTICS_CUSTOMER, settings.LOGISTICS_KEY
        sign = hashlib.md5((param + key + customer).encode()).hexdigest().upper()
        try:
            response = requests.post(
                settings.LOGISTICS_API_BASE.rstrip("/") + "/poll/query.do",
                data={"customer": customer, "sign": sign, "param": param},
                timeout=settings.LOGISTICS_TIMEOUT_SECONDS,
            )
            response.raise_for_status()
            body = response.json()
        except (requests.RequestException, ValueError) as exc:
            logger.warning("logistics query %s %s failed: %s", com, num, exc)
            raise LogisticsUnavailable() from exc
        if body.get("status") == "200" and body.get("message") == "ok":
            events = [{"time": e.get("time", ""), "text": e.get("context", "")} for e in body.get("data") or []]
            return Tracking(state=STATES.get(str(body.get("state")), "unknown"), events=events)
        if str(body.get("returnCode")) == "500":  # "no result yet": a fresh parcel, not an outage
            return Tracking(state="unknown", events=[])
        logger.warning("logistics query %s %s refused: %s", com, num, body)
        raise LogisticsUnavailable()


def provider() -> TrackingProvider:
    return import_string(settings.LOGISTICS_PROVIDER)()


def tracking_get(*, carrier_code: str, tracking_no: str, phone: str = "") -> Tracking:
    """The parcel's route, cached ``LOGISTICS_CACHE_SECONDS`` per (carrier, number). Raises
    LogisticsUnavailable when the provider cannot answer (nothing is cached then). Works
    without Redis too (the cache is skipped)."""
    key = f"logistics:{carrier_code}:{hashlib.sha1(tracking_no.encode()).hexdigest()}"
    try:
        cached = cache.get(key)
    except backend_errors():
        cached = None
    if cached is not None:
        return Tracking(**cached)
    tracking = provider().query(com=carrier_code, num=tracking_no, phone=phone)
    try:
        cache.set(key, asdict(tracking), settings.LOGISTICS_CACHE_SECONDS)
    except backend_errors():
        pass
    return tracking
