"""Beat on several machines (starmall/beat.py, celery-redbeat): two real beat processes on one
private Redis; only the lock holder sends, and when its machine dies (SIGKILL, whole group) the
other takes over within the lock timeout and carries on from the last runs kept in Redis — no
job sent twice by either in the window. Also: the sending beat's heartbeat (``/healthz``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_helpers import BASE_DIR, wait_for

EXPIRE_TASK = "apps.orders.tasks.orders_expire_due"
LOCK_TIMEOUT = 10  # BEAT_LOCK_TIMEOUT_SECONDS for this test (default 30)


class Beat:
    """``celery -A starmall beat`` (the shop's scheduler) in its own session, logging to a file."""

    def __init__(self, workdir: Path, redis_url: str, n: int):
        self.logfile = workdir / f"beat{n}.log"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "starmall.settings.test",
            "REDIS_URL": redis_url,
            "DATABASE_URL": f"sqlite:///{workdir / 'beat.sqlite3'}",
            "STARMALL_VAR_DIR": str(workdir),
            "ORDER_EXPIRE_SWEEP_SECONDS": "1",
            "BEAT_LOCK_TIMEOUT_SECONDS": str(LOCK_TIMEOUT),
            "PYTHONUNBUFFERED": "1",
        }
        with open(self.logfile, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "starmall", "beat", "-l", "INFO", "-s", str(workdir / f"s{n}")],
                cwd=BASE_DIR,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.logfile.read_text(errors="replace")

    def leads(self) -> bool:
        assert self.process.poll() is None, self.log()[-3000:]
        return "beat: Acquired lock" in self.log()

    def sent(self) -> int:
        return self.log().count(f"Sending due task orders-expire-unpaid ({EXPIRE_TASK})")

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)


def queued(private_redis) -> int:
    """Sweep messages the beats published (nobody consumes them here)."""
    from django.conf import settings

    return sum(m["headers"]["task"] == EXPIRE_TASK for m in private_redis.queue(settings.CELERY_TASK_DEFAULT_QUEUE))


def test_one_beat_sends_and_another_takes_over_when_its_machine_dies(shop_redis, tmp_path):
    from starmall.heartbeats import shop_heartbeats

    beats = [Beat(tmp_path, shop_redis.url, n) for n in (1, 2)]
    try:
        leader = wait_for(
            lambda: next((b for b in beats if b.leads()), None), timeout=60, what="a beat to take the lock"
        )
        follower = beats[1 - beats.index(leader)]
        wait_for(lambda: queued(shop_redis) >= 1, timeout=30, what="the first sweep sent")
        assert wait_for(lambda: shop_heartbeats()["beat"] == "ok", timeout=10, what="the beat heartbeat")
        start, before = time.monotonic(), queued(shop_redis)
        time.sleep(8)
        both_running = queued(shop_redis) - before
        elapsed = time.monotonic() - start
        # Every second, once: two senders would have published about twice as many.
        assert elapsed - 2 <= both_running <= elapsed + 1, (both_running, elapsed)
        assert follower.sent() == 0 and not follower.leads()

        leader.kill()  # its machine dies: the lock is never released, it lapses
        killed_at, at_kill = time.monotonic(), queued(shop_redis)
        wait_for(follower.leads, timeout=LOCK_TIMEOUT + 20, what="the other beat to take over")
        took_over = time.monotonic() - killed_at
        assert took_over <= LOCK_TIMEOUT + 10  # the lock's timeout plus one try (5 s), well inside a minute
        wait_for(lambda: follower.sent() >= 5, timeout=30, what="the new leader to send")
        after = queued(shop_redis)
        window = time.monotonic() - killed_at
        # The jobs continue, and the handover doubled none: at most one send per second of the window.
        assert after - at_kill >= 5
        assert after - at_kill <= window + 1, (after - at_kill, window)
        # Beat logs "Sending due task" before it publishes: a SIGKILL between the two loses that one
        # tick of the killed leader (the next tick sends it); never a message more than was logged.
        assert leader.sent() + follower.sent() - 1 <= queued(shop_redis) <= leader.sent() + follower.sent()
    finally:
        for beat in beats:
            beat.kill()


@pytest.mark.postgres
def test_a_running_worker_reports_its_heartbeat_under_its_own_name(
    transactional_db, shop_redis, celery_worker_process, client
):
    from django.core.cache import cache

    from starmall.heartbeats import shop_heartbeats

    assert shop_heartbeats()["worker"] == "missing"
    worker = celery_worker_process(shop_redis.url)
    wait_for(lambda: shop_heartbeats()["worker"] == "ok", timeout=20, what="the worker's heartbeat")
    assert cache.get("heartbeat:worker")["who"].startswith(f"faults{os.getpid()}-1@")
    body = client.get("/healthz").json()
    assert (body["status"], body["worker"]) == ("ok", "ok")
    worker.kill()
