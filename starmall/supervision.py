"""The shop's processes under supervisord: one config written here, used by ``make run`` and the fault
tests (``manage.py runshop`` and ``tests/faults/test_redis_outage.py`` both run :func:`render_config` of
:func:`shop_programs`), so what the test proves is what ``make run`` does: every program is restarted
when it exits, after a growing pause (supervisord's BACKOFF) if it dies within ``START_SECONDS``, up to
``START_RETRIES`` times in a row, each exit and restart logged; one exiting never stops the others;
SIGINT/SIGTERM to supervisord stops every program's whole process group (``STOP_WAIT_SECONDS``, then
SIGKILL) in reverse ``priority`` order (Redis last). Supervisor, not honcho (which stops everything when
one process exits) nor circus (pyzmq and tornado, no back-off of its own): it is pure Python, and the
same ``[program:x]`` sections serve a server (docs/DEPLOY.md).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

START_SECONDS = 5  # a program that lives this long counts as started (its back-off resets)
START_RETRIES = 1000  # failed starts in a row before supervisord gives up on a program (FATAL)
STOP_WAIT_SECONDS = 10  # SIGTERM, then this long, then SIGKILL to the whole process group


@dataclass(frozen=True)
class Program:
    """One supervised process: ``name``, the ``command`` (argv list), its start ``priority``
    (lower starts first and stops last) and the signal that stops it gracefully."""

    name: str
    command: list[str]
    priority: int = 100
    stopsignal: str = "TERM"


def shop_programs(
    *,
    queues: list[str],
    beat_schedule: str | Path,
    sandbox: tuple[str, int] | None = None,
    redis_command: list[str] | None = None,
    python: str = sys.executable,
    roles: frozenset[str] | set[str] = frozenset({"web", "worker", "beat"}),
    worker_name: str | None = None,
) -> list[Program]:
    """The shop's processes: ``web`` (gunicorn with uvicorn workers, ``starmall/gunicorn_conf.py``),
    ``worker`` (Celery on ``queues``, without gossip, mingle and heartbeat), ``beat`` (schedule file
    ``beat_schedule``), ``wechat`` (the sandbox on ``sandbox = (host, port)``, when given) and ``redis``
    (``redis_command``, the embedded server in the foreground, when given).

    ``roles`` (``STARMALL_ROLES``, ``starmall.roles``) keeps only the ``web``, ``worker`` and ``beat``
    programs it names; ``worker_name`` is the worker's Celery node name (``-n``; Celery expands ``%h`` to
    the host name), unique per machine and process so that two workers on one host are not both
    ``celery@host``.
    """
    worker = [
        python,
        "-m",
        "celery",
        "-A",
        "starmall",
        "worker",
        "-Q",
        ",".join(queues),
        "-c",
        "2",
        "-l",
        "INFO",
        # Those broadcast channels are where kombu's Redis transport fails on reconnecting
        # (celery/kombu#582; workers that stop consuming after a Redis restart, celery/celery#8030
        # and #8082), and a single worker needs none of them.
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    if worker_name:
        worker += ["-n", worker_name]
    programs = [
        Program("web", [python, "-m", "gunicorn", "-c", "python:starmall.gunicorn_conf", "starmall.asgi:application"]),
        Program("worker", worker),
        Program("beat", [python, "-m", "celery", "-A", "starmall", "beat", "-l", "INFO", "-s", str(beat_schedule)]),
    ]
    programs = [program for program in programs if program.name in roles]
    if sandbox is not None:
        host, port = sandbox
        programs.append(
            Program("wechat", [python, "-m", "wechat_sandbox", "--host", host, "--port", str(port)], priority=50)
        )
    if redis_command is not None:
        programs.append(Program("redis", redis_command, priority=10))
    return programs


def render_config(programs: list[Program], *, run_dir: str | Path, directory: str | Path) -> str:
    """The text of a supervisord.conf running ``programs`` in the foreground.

    Everything is logged to supervisord's stdout: its own lines (``spawned``, ``exited``,
    ``gave up``; also kept in ``run_dir/supervisord.log``) and each program's output.
    ``run_dir`` holds the pid file and the control socket (``supervisorctl -c <file> status``);
    programs run in ``directory``.
    """
    run_dir = Path(run_dir)
    lines = [
        "; written by starmall.supervision; regenerated at every start",
        "[supervisord]",
        "nodaemon=true",
        f"logfile={run_dir / 'supervisord.log'}",  # in the foreground its lines go to stdout too
        "logfile_maxbytes=10MB",
        "logfile_backups=2",
        "loglevel=info",
        f"pidfile={run_dir / 'supervisord.pid'}",
        f"childlogdir={run_dir}",
        f"directory={directory}",
        "",
        "[unix_http_server]",
        f"file={run_dir / 'supervisor.sock'}",
        "chmod=0700",
        "",
        "[rpcinterface:supervisor]",
        "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface",
        "",
        "[supervisorctl]",
        f"serverurl=unix://{run_dir / 'supervisor.sock'}",
        "",
    ]
    for program in programs:
        command = shlex.join(program.command).replace("%", "%%")  # supervisord expands %(...)s
        lines += [
            f"[program:{program.name}]",
            f"command={command}",
            f"directory={directory}",
            f"priority={program.priority}",
            "autostart=true",
            "autorestart=true",
            f"startsecs={START_SECONDS}",
            f"startretries={START_RETRIES}",
            f"stopsignal={program.stopsignal}",
            f"stopwaitsecs={STOP_WAIT_SECONDS}",
            "stopasgroup=true",
            "killasgroup=true",
            "redirect_stderr=true",
            "stdout_logfile=/dev/stdout",
            "stdout_logfile_maxbytes=0",
            "",
        ]
    return "\n".join(lines)


def write_config(path: str | Path, programs: list[Program], *, directory: str | Path) -> Path:
    """Write :func:`render_config` to ``path`` (its folder holds the pid file and socket)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_config(programs, run_dir=path.parent, directory=directory))
    return path
