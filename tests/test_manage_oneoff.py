"""``manage.py`` outside ``make run`` (a fresh clone, another STARMALL_VAR_DIR): a command the
database is not set up for is refused in one line, creates no SQLite file and leaves no
embedded redis-server behind; against a migrated database it works, and the shop's own Redis,
when it runs, is used and left running.

Each case runs ``manage.py`` in a subprocess with the embedded defaults (no DATABASE_URL, no
REDIS_URL) and a var dir of its own.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from starmall import embedded_redis
from starmall.oneoff import NOT_READY

BASE_DIR = Path(__file__).resolve().parent.parent
CACHE_ROUND_TRIP = (
    "from django.core.cache import cache; from apps.accounts.models import Customer; "
    "cache.set('oneoff-test', 42); print(Customer.objects.count(), cache.get('oneoff-test'))"
)


def _var_dir() -> Path:
    # Short: a unix socket path must stay under 108 bytes.
    return Path(tempfile.mkdtemp(prefix="sm-oneoff-", dir="/tmp"))


def manage(var_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "STARMALL_EMBEDDED_REDIS", "DJANGO_SETTINGS_MODULE")
        and not k.startswith("STARMALL_TEST")
    }
    env.update({"STARMALL_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "starmall.settings.local"})
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=180
    )


def redis_processes(var_dir: Path) -> list[str]:
    """pids of redis-server processes serving this var dir's socket."""
    found = subprocess.run(["pgrep", "-f", f"{var_dir}/redis.sock"], capture_output=True, text=True)
    return found.stdout.split()


@pytest.fixture
def fresh():
    var_dir = _var_dir()
    yield var_dir
    _clean(var_dir)


def _clean(var_dir: Path) -> None:
    for pid in redis_processes(var_dir):  # only what this var dir's commands started
        os.kill(int(pid), signal.SIGKILL)
    shutil.rmtree(var_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def migrated():
    """A var dir whose SQLite database `manage.py migrate` set up (module-wide: ~15 s)."""
    var_dir = _var_dir()
    try:
        result = manage(var_dir, "migrate", "--no-input", "-v0")
        assert result.returncode == 0, result.stderr
        assert redis_processes(var_dir) == []  # migrate started its own Redis and stopped it
        yield var_dir
    finally:
        _clean(var_dir)


@pytest.mark.parametrize(
    "args",
    [
        ["reconcile", "--date", "2026-01-01"],
        ["shell", "-c", "print('ran')"],
        ["seed_demo"],
    ],
)
def test_command_on_a_fresh_var_dir_is_refused_without_side_effects(fresh, args):
    result = manage(fresh, *args)
    assert result.returncode == 1
    database = fresh / "starmall.sqlite3"
    assert result.stderr.strip() == NOT_READY.format(reason=f"no database file {database}")
    assert "\n" not in result.stderr.strip() and result.stdout == ""
    assert not database.exists()
    assert redis_processes(fresh) == [] and not (fresh / "redis.pid").exists()


def test_command_on_an_unmigrated_or_half_migrated_database_is_refused(fresh):
    database = fresh / "starmall.sqlite3"
    database.touch()  # left by an older run: empty
    result = manage(fresh, "shell", "-c", "print('ran')")
    assert (result.returncode, result.stderr.strip()) == (1, NOT_READY.format(reason="no tables: never migrated"))
    assert database.exists() and database.stat().st_size == 0  # someone else's file: kept as it was
    assert manage(fresh, "migrate", "contenttypes", "-v0").returncode == 0  # one app only
    result = manage(fresh, "reconcile")
    assert result.returncode == 1 and "migrations not applied, e.g. " in result.stderr
    assert result.stderr.startswith("Starmall: 数据库尚未就绪，请先运行 make run")
    assert redis_processes(fresh) == []


def test_tools_run_on_a_fresh_var_dir_and_leave_no_empty_database(fresh):
    result = manage(fresh, "showmigrations", "accounts")
    assert result.returncode == 0, result.stderr
    assert "[ ] 0001_initial" in result.stdout
    assert not (fresh / "starmall.sqlite3").exists()  # opened by the tool, removed after
    assert manage(fresh, "check").returncode == 0
    assert redis_processes(fresh) == [] and sorted(p.name for p in fresh.iterdir()) == []


def test_command_on_a_migrated_database_works_and_stops_the_redis_it_started(migrated):
    result = manage(migrated, "shell", "-c", CACHE_ROUND_TRIP)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "0 42"  # the database and the embedded Redis answered
    assert redis_processes(migrated) == []
    assert not (migrated / "redis.sock").exists()


def test_command_uses_the_shops_running_redis_and_leaves_it_running(migrated, monkeypatch):
    # make run is up: its Redis answers on the var dir's socket (here a daemon standing in for it).
    monkeypatch.setattr(embedded_redis, "VAR_DIR", migrated)
    monkeypatch.setenv("STARMALL_EMBEDDED_REDIS", "redis")
    embedded_redis.ensure_running()
    try:
        before = redis_processes(migrated)
        assert len(before) == 1
        result = manage(migrated, "shell", "-c", CACHE_ROUND_TRIP)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip().splitlines()[-1] == "0 42"
        assert embedded_redis.is_running() and redis_processes(migrated) == before
    finally:
        embedded_redis.stop()
