"""The web server's workers never outlive their master (starmall/gunicorn_conf.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from fault_helpers import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def _serves(port: int) -> bool:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read() == b"ok"
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_exit_when_the_master_is_killed_so_a_new_master_gets_the_port(tmp_path):
    """``kill -9`` of gunicorn's master (by hand, or OOM) used to leave the uvicorn workers
    serving the port, and every master supervisord started next died on "Address already in
    use". Now each worker gets SIGTERM with its master's death, and the port is free again."""
    port = free_port()
    env = {**os.environ, "WEB_BIND": f"127.0.0.1:{port}", "PYTHONPATH": f"{ROOT}:{ROOT / 'tests' / 'faults'}"}
    master = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:starmall.gunicorn_conf", "tiny_asgi:app"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        wait_for(lambda: len(_children(master.pid)) == 2, timeout=30)
        workers = _children(master.pid)
        wait_for(lambda: _serves(port), timeout=30)
        master.send_signal(signal.SIGKILL)
        master.wait(timeout=10)
        wait_for(lambda: not any(_alive(pid) for pid in workers), timeout=15)
        again = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:starmall.gunicorn_conf", "tiny_asgi:app"],
                                 cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        try:
            wait_for(lambda: _serves(port), timeout=30)
            assert again.poll() is None  # the new master holds the port
        finally:
            os.killpg(again.pid, signal.SIGKILL)
            again.wait(timeout=10)
    finally:
        try:
            os.killpg(master.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
