import threading
from collections.abc import Callable

import pytest
from django.db import connection


@pytest.fixture
def place_order():
    """``place_order(api, items=[(sku, qty)], address=None, slot=None)`` -> order JSON (unpaid)."""

    def place(api, *, items, address=None, slot=None, **extra):
        body = {"items": [{"sku_id": sku.pk, "quantity": qty} for sku, qty in items], **extra}
        if address is not None:
            body["address_id"] = address.pk
        if slot is not None:
            body["slot_id"] = slot.pk
        confirmed = api.post("/api/v1/orders/confirm", body, format="json")
        assert confirmed.status_code == 200, confirmed.json()
        created = api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")
        assert created.status_code == 201, created.json()
        return created.json()

    return place


@pytest.fixture
def race():
    """``race(fn, n)``: call ``fn(i)`` in n real threads released together by a Barrier."""
    return _race


def _race(fn: Callable[[int], object], n: int, timeout: float = 30) -> list[object]:
    """Call ``fn(i)`` for i in 0..n-1 at the same moment; return results or raised exceptions."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout)
            results[i] = fn(i)
        except BaseException as exc:  # noqa: BLE001 - the test inspects what each thread raised
            results[i] = exc
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a racing thread hung"
    return results
