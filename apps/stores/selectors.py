"""Reads of stores: the list for the mini-program (nearest first), a store for confirm, and
which store a staff login works at."""

from __future__ import annotations

import math

from apps.stores.models import Store, StoreStaff

EARTH_RADIUS_M = 6_371_008.8  # mean Earth radius (IUGG), metres


def haversine_m(lat1: float, lng1: float, lat2: float, lng2: float) -> int:
    """Great-circle distance in whole metres between two WGS-84 points (degrees)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lng2 - lng1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return round(2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(a))))


def store_list(*, lat: float | None = None, lng: float | None = None) -> list[dict]:
    """Open stores as ``{"id", "name", "address", "phone", "hours", "lat", "lng", "distance_m"}``;
    with a position (degrees), nearest first and ``distance_m`` in metres (haversine), else in
    staff's order with ``distance_m`` null. A shop has a handful of stores: computed in Python."""
    rows = []
    for store in Store.objects.filter(is_active=True).order_by("sort", "id"):
        distance = None if lat is None or lng is None else haversine_m(lat, lng, float(store.lat), float(store.lng))
        rows.append({**store.snapshot(), "lat": float(store.lat), "lng": float(store.lng), "distance_m": distance})
    if lat is not None and lng is not None:
        rows.sort(key=lambda row: (row["distance_m"], row["id"]))
    return rows


def store_snapshot(store_id: int) -> dict | None:
    """An open store as an order keeps it, or None (orders' resolver: ``apps.orders.pickup``)."""
    store = Store.objects.filter(pk=store_id, is_active=True).first()
    return store.snapshot() if store else None


def staff_store_id(user) -> int | None:
    """The store a staff login works at, or None (not store staff)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return StoreStaff.objects.filter(user_id=user.pk).values_list("store_id", flat=True).first()
