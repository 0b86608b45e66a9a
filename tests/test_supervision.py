"""supervisord as ``make run`` configures it (starmall.supervision): a program that exits is
restarted with growing pauses and logged, the others keep running, SIGTERM stops everything."""

from __future__ import annotations

import datetime as dt
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from starmall import supervision

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]
FLAKY = [sys.executable, "-c", "import time; time.sleep(0.2); raise SystemExit(3)"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def spawned(log: str, name: str) -> list[tuple[dt.datetime, int]]:
    found = re.findall(rf"^(\S+ \S+) INFO spawned: '{name}' with pid (\d+)$", log, re.M)
    return [(dt.datetime.strptime(t, "%Y-%m-%d %H:%M:%S,%f"), int(pid)) for t, pid in found]


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return result


def test_exits_are_restarted_with_back_off_and_never_stop_the_others(tmp_path: Path):
    programs = [
        supervision.Program("steady", SLEEPER),
        supervision.Program("killed", SLEEPER),
        supervision.Program("flaky", FLAKY),
    ]
    config = supervision.write_config(tmp_path / "supervisord.conf", programs, directory=tmp_path)
    log_path = tmp_path / "out.log"
    with open(log_path, "wb") as out:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    pids: list[int] = []
    try:
        log = lambda: log_path.read_text()  # noqa: E731
        steady = wait_until(lambda: spawned(log(), "steady"), 15, "steady to start")[0][1]
        killed = wait_until(lambda: spawned(log(), "killed"), 15, "killed to start")[0][1]
        pids += [steady, killed]
        # A running program killed from outside comes back with a new pid.
        os.kill(killed, signal.SIGKILL)
        restarted = wait_until(lambda: spawned(log(), "killed")[1:], 15, "killed to be restarted")[0][1]
        pids.append(restarted)
        assert restarted != killed and alive(restarted)
        assert "WARN exited: killed (terminated by SIGKILL; not expected)" in log()
        # A program failing at start is retried after 1 s, then 2 s, 3 s...: the pauses grow
        # (supervisord polls about once a second, so compare the first pause with the fourth).
        flaky = wait_until(lambda: len(spawned(log(), "flaky")) >= 5 and spawned(log(), "flaky"), 40, "5 flaky starts")
        gaps = [(b[0] - a[0]).total_seconds() for a, b in zip(flaky, flaky[1:])]
        assert gaps[3] > gaps[0] + 1.5, gaps
        assert log().count("WARN exited: flaky (exit status 3; not expected)") >= 3
        # The others never noticed.
        assert spawned(log(), "steady") == spawned(log(), "steady")[:1] and alive(steady)
    finally:
        daemon.send_signal(signal.SIGTERM)  # what Ctrl-C on make run does
        daemon.wait(30)
    assert daemon.returncode == 0
    assert [pid for pid in pids if alive(pid)] == []
    assert "stopped: steady (terminated by SIGTERM)" in log_path.read_text()
