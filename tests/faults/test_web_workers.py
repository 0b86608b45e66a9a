"""The web server's workers never outlive their master (starmall/gunicorn_conf.py)."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from fault_helpers import alive, children, free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]


def _serves(port: int) -> bool:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read() == b"ok"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_exit_when_the_master_is_killed_so_a_new_master_gets_the_port(tmp_path):
    """``kill -9`` of gunicorn's master (by hand, or OOM) used to leave the uvicorn workers
    serving the port, and every master supervisord started next died on "Address already in
    use". Now each worker gets SIGTERM with its master's death, and the port is free again."""
    port = free_port()
    env = {**os.environ, "WEB_BIND": f"127.0.0.1:{port}", "PYTHONPATH": f"{ROOT}:{ROOT / 'tests' / 'faults'}"}
    master = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:starmall.gunicorn_conf", "tiny_asgi:app"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: len(children(master.pid)) == 2, timeout=30)
        workers = children(master.pid)
        wait_for(lambda: _serves(port), timeout=30)
        master.send_signal(signal.SIGKILL)
        master.wait(timeout=10)
        wait_for(lambda: not any(alive(pid) for pid in workers), timeout=15)
        again = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "python:starmall.gunicorn_conf", "tiny_asgi:app"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
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


def _refused_chat_socket(port: int) -> socket.socket:
    """A chat WebSocket with a bad token, refused by the consumer with 4401, whose client never
    answers the close frame (a phone that lost its network): the socket is left to the server."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        f"GET /ws/chat/1?token=bad HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    answer = b""
    while b"\x88" not in answer.partition(b"\r\n\r\n")[2]:  # 0x88: the close frame after the 101
        answer += sock.recv(4096)
    head, _, frame = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101 ") and int.from_bytes(frame[2:4], "big") == 4401
    return sock


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_shop_workers_exit_promptly_when_the_master_is_killed_after_refusing_chat_sockets(shop_server):
    """After chat sockets refused with 4401, ``kill -9`` of the master left a worker behind
    (parent 1) until the run stopped: SIGTERM started uvicorn's graceful shutdown, which waits
    without limit for the consumers' tasks, and a consumer whose channel-layer receive never
    finishes its cancellation never ends. Every worker is gone within seconds now."""
    server = shop_server()
    wait_for(lambda: len(server.workers()) == 2, timeout=30, what="two workers")
    workers = server.workers()
    held = [_refused_chat_socket(server.port) for _ in range(8)]  # spread over both workers
    time.sleep(1)  # the consumers are past their close, waiting for the client's
    os.kill(server.master, signal.SIGKILL)
    server.process.wait(10)
    killed_at = time.monotonic()
    wait_for(
        lambda: not any(alive(pid) for pid in workers),
        timeout=5,
        interval=0.1,
        what=f"workers {workers} to exit (left: {[p for p in workers if alive(p)]})",
    )
    assert time.monotonic() - killed_at < 5
    for sock in held:
        sock.close()
