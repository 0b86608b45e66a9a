"""The whole shop survives Redis restarting empty: real processes, supervised as ``make run`` does.

supervisord runs the programs ``starmall.supervision.shop_programs`` describes (gunicorn with
``starmall/gunicorn_conf.py``, the Celery worker and beat, the WeChat sandbox) on this run's
PostgreSQL test database and a private ``redis-server`` (never the machine's). The test stops
that Redis for 5 s and starts it again with nothing in it: tokens, drafts and queued tasks are
gone, and the database must be enough to carry on.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.utils import timezone
from fault_helpers import BASE_DIR, free_port, wait_for, worker_database_url, worker_db_sessions

from starmall import supervision
from starmall.dispatch import PAUSE_SECONDS
from wechat_sandbox.client import SandboxControl

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

OPENID = "oRedisOutageCustomer000000001"
SERVICE_UNAVAILABLE = {"code": "service_unavailable", "message": "服务暂时不可用，请稍后再试。", "detail": {}}


class ShopStack:
    """supervisord + the shop's programs against ``redis_url``; HTTP helpers for the API."""

    def __init__(self, *, redis_url: str, workdir: Path):
        from django.conf import settings

        queues = [settings.CELERY_TASK_DEFAULT_QUEUE] + sorted(
            {r["queue"] for r in settings.CELERY_TASK_ROUTES.values()}
        )
        self.web_port, self.sandbox_port = free_port(), free_port()
        self.base = f"http://127.0.0.1:{self.web_port}"
        self.sandbox = SandboxControl(f"http://127.0.0.1:{self.sandbox_port}/")
        self.log_path = workdir / "supervisord.out"
        programs = supervision.shop_programs(
            queues=queues, beat_schedule=workdir / "celerybeat-schedule", sandbox=("127.0.0.1", self.sandbox_port)
        )
        config = supervision.write_config(workdir / "supervisor" / "supervisord.conf", programs, directory=BASE_DIR)
        sandbox_base = f"http://127.0.0.1:{self.sandbox_port}/"
        env = {
            **os.environ,  # STARMALL_TEST_RUN_ID: this run's queues and cache prefix
            "DJANGO_SETTINGS_MODULE": "starmall.settings.test",
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": redis_url,
            "WEB_BIND": f"127.0.0.1:{self.web_port}",
            "SITE_URL": self.base,
            "WECHAT_API_BASE": sandbox_base,
            "WECHAT_PAY_API_BASE": sandbox_base,
            "BEAT_SWEEP_SECONDS": "3",
            "STARMALL_VAR_DIR": str(workdir),
            "PYTHONUNBUFFERED": "1",
        }
        with open(self.log_path, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(config)],
                cwd=BASE_DIR,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM supervisord (it stops every program); then SIGKILL any program group left."""
        import re

        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(40)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        for pid in re.findall(r"spawned: '\w+' with pid (\d+)", self.log()):
            try:  # each program leads its own process group (supervisord setpgrp)
                os.killpg(int(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    # --- HTTP ---
    def get(self, path: str, token: str | None = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return requests.get(self.base + path, headers=headers, timeout=10)

    def post(self, path: str, body: dict, token: str | None = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return requests.post(self.base + path, json=body, headers=headers, timeout=15)

    def healthy(self) -> bool:
        try:
            return self.get("/healthz").status_code == 200
        except requests.RequestException:
            return False

    def login(self) -> str:
        code = self.sandbox.login_code(OPENID)["code"]
        response = self.post("/api/v1/auth/wechat/login", {"code": code})
        assert response.status_code == 200, response.text
        return response.json()["token"]

    def unpaid_order(self, token: str, sku_id: int, address_id: int) -> str:
        """confirm -> create -> pay (prepay at the sandbox); the order_no, not yet paid."""
        confirmed = self.post(
            "/api/v1/orders/confirm", {"items": [{"sku_id": sku_id, "quantity": 1}], "address_id": address_id}, token
        )
        assert confirmed.status_code == 200, confirmed.text
        created = self.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, token)
        assert created.status_code == 201, created.text
        order_no = created.json()["order_no"]
        paying = self.post(f"/api/v1/orders/{order_no}/pay", {"method": "wechat"}, token)
        assert paying.status_code == 200, paying.text
        return order_no


@pytest.fixture
def shop_stack(transactional_db, private_redis, tmp_path):
    """The running shop; torn down (every process, every DB session) before the database is flushed."""
    stack = ShopStack(redis_url=private_redis.url, workdir=tmp_path)
    try:
        wait_for(stack.healthy, timeout=90, interval=0.5, what=f"/healthz of the shop\n{stack.log()[-3000:]}")
        yield stack
    finally:
        stack.stop()
        wait_for(lambda: worker_db_sessions() == 0, timeout=30, what="the shop's DB sessions to end")


def order(order_no: str):
    from apps.orders.models import Order

    return Order.objects.get(order_no=order_no)


def notified(stack: ShopStack, order_no: str) -> list[dict]:
    return [n for n in stack.sandbox.notifications(out_trade_no=order_no) if n.get("acknowledged")]


@pytest.mark.timeout(300)
def test_redis_restarting_empty_the_shop_comes_back(shop_stack, private_redis, make_sku):
    from apps.accounts.models import Address, Customer
    from apps.orders.models import FollowUp, OrderStatus

    stack = shop_stack
    sku = make_sku(price_fen=12800, stock=10)
    customer = Customer.objects.create(openid=OPENID, nickname="断电顾客")
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
    token = stack.login()

    # Before the outage: A stays unpaid (its deadline brought forward to 10 s from now), B will be
    # paid while Redis is down.
    order_a = stack.unpaid_order(token, sku.pk, address.pk)
    order_b = stack.unpaid_order(token, sku.pk, address.pk)
    from apps.orders.models import Order

    deadline_a = timezone.now() + dt.timedelta(seconds=10)
    assert Order.objects.filter(order_no=order_a).update(pay_deadline=deadline_a) == 1

    # --- Redis down for 5 s ---
    private_redis.stop()
    down_at = time.monotonic()
    me = stack.get("/api/v1/me", token)
    assert (me.status_code, me.headers["Content-Type"], me.json()) == (503, "application/json", SERVICE_UNAVAILABLE)
    confirm = stack.post("/api/v1/orders/confirm", {"items": [{"sku_id": sku.pk, "quantity": 1}]}, token)
    assert (confirm.status_code, confirm.json()["code"]) == (503, "service_unavailable")
    health = stack.get("/healthz")
    assert (health.status_code, health.json()["redis"], health.json()["database"]) == (503, "error", "ok")
    # WeChat's notification for B is applied and answered SUCCESS all the same.
    stack.sandbox.pay(order_b)
    wait_for(lambda: notified(stack, order_b), timeout=4.5, interval=0.1, what="B's notification to be acknowledged")
    b_notified_at = time.monotonic()  # the web process that took it pauses pushes for PAUSE_SECONDS
    assert order(order_b).status == OrderStatus.PAID
    assert time.monotonic() - down_at < 5.5
    time.sleep(max(0.0, 5 - (time.monotonic() - down_at)))

    # --- Redis back, EMPTY (no persistence): tokens, drafts and queued tasks are gone ---
    private_redis.start()
    back_at = time.monotonic()
    wait_for(stack.healthy, timeout=60, interval=0.5, what="/healthz after Redis came back")
    assert stack.get("/api/v1/me", token).status_code == 401  # the old token went with Redis
    token = stack.login()
    order_c = stack.unpaid_order(token, sku.pk, address.pk)
    # Past the push pause of the process that failed to push B's follow-ups (starmall.dispatch).
    time.sleep(max(0.0, PAUSE_SECONDS + 0.5 - (time.monotonic() - b_notified_at)))
    stack.sandbox.pay(order_c)
    wait_for(lambda: order(order_c).status == OrderStatus.PAID, timeout=30, interval=0.2, what="C paid")

    # C's follow-ups (subscription message, SMS, points) are delivered by the reconnected worker.
    def followups_done():
        rows = list(FollowUp.objects.filter(order__order_no=order_c).values_list("status", flat=True))
        return rows and set(rows) == {FollowUp.Status.DONE}

    wait_for(
        followups_done,
        timeout=max(1.0, 60 - (time.monotonic() - back_at)),
        interval=0.5,
        what=f"C's follow-ups to be done (worker log tail:\n{stack.log()[-3000:]})",
    )
    assert [m for m in stack.sandbox.messages(touser=OPENID) if order_c in str(m)], "C's subscription message"

    # A is cancelled at its deadline by beat's sweep (its countdown task vanished with Redis).
    wait_for(
        lambda: order(order_a).status == OrderStatus.CANCELLED,
        timeout=max(1.0, 60 - (time.monotonic() - back_at)),
        interval=0.5,
        what="A cancelled by the sweep",
    )
    assert time.monotonic() - back_at < 60
    assert order(order_a).cancelled_at >= deadline_a
    sku.refresh_from_db()
    assert sku.stock == 10 - 2  # B and C hold one each; A's unit came back
    assert [order(o).status for o in (order_a, order_b, order_c)] == [
        OrderStatus.CANCELLED,
        OrderStatus.PAID,
        OrderStatus.PAID,
    ]
    # The worker reconnected by itself (celery < 5.7: 5.7.0 died here with AttributeError
    # 'hostname' and only came back because supervisord restarted it).
    assert "exited: worker" not in stack.log() and "Unrecoverable error" not in stack.log()
    # B's follow-up rows wait for beat's re-dispatch (the outbox), none lost.
    assert FollowUp.objects.filter(order__order_no=order_b).exclude(status=FollowUp.Status.FAILED).count() >= 1
