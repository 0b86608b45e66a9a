"""manage.py's embedded Redis never competes with the one ``make run``'s supervisord runs."""

from __future__ import annotations

import os
import subprocess
import sys

from starmall import embedded_redis


def test_no_second_server_while_the_shop_supervises_redis(tmp_path, monkeypatch):
    # make run is going (its supervisord is alive) and its Redis is stopped (an outage, or
    # `supervisorctl stop redis`): a `manage.py shell` meanwhile used to start its own daemon on
    # var/redis.sock; the worker connected to it and, once supervisord restarted the real one,
    # consumed from an orphan no one pushed to (follow-ups never done; Ctrl-C left it running).
    monkeypatch.setattr(embedded_redis, "VAR_DIR", tmp_path)
    monkeypatch.setenv("STARMALL_EMBEDDED_REDIS", "redis")
    (tmp_path / "supervisor").mkdir()
    supervisord = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "supervisor" / "supervisord.pid").write_text(f"{supervisord.pid}\n")
        assert embedded_redis.ensure_running() == tmp_path / "redis.sock"
        assert not embedded_redis.is_running()
        assert not (tmp_path / "redis.sock").exists() and not (tmp_path / "redis.pid").exists()
    finally:
        embedded_redis.stop()
        supervisord.kill()
        supervisord.wait()
    # Once the supervisor is gone (its pid file stale), manage.py starts the daemon as before.
    try:
        assert embedded_redis.ensure_running() == tmp_path / "redis.sock"
        assert embedded_redis.is_running()
    finally:
        embedded_redis.stop()
    assert os.path.exists(tmp_path / "supervisor" / "supervisord.pid")
