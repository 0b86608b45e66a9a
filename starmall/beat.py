"""Celery beat on several machines: exactly one sends the periodic jobs at a time.

celery-redbeat keeps the schedule (and each job's last run) in Redis and lets a beat send only
while it holds a Redis lock (``<prefix>:redbeat::lock``). Every other beat waits for that lock,
trying every ``beat_max_loop_interval`` (5 s); the holder extends it at every tick to
``BEAT_LOCK_TIMEOUT_SECONDS`` (30 s). When the holder's machine dies, the lock expires and
another beat takes over within that timeout plus one try (well inside a minute), carrying on
from the last runs recorded in Redis: nothing is sent twice by the change of hands. A beat
that loses the lock (Redis restarted empty) exits and is restarted by its supervisor, and waits
for the lock like any other. Every periodic job is safe to run twice anyway (DESIGN.md).

:class:`Scheduler` adds the beat's heartbeat (``starmall.heartbeats``) after every tick: only
the beat that sends reports, so ``/healthz``'s ``"beat"`` means "a beat is sending".
"""

from __future__ import annotations

import socket

from redbeat import RedBeatScheduler

from starmall.heartbeats import heartbeat


class Scheduler(RedBeatScheduler):
    """RedBeatScheduler that writes the ``beat`` heartbeat after each tick (holding the lock)."""

    def tick(self, *args, **kwargs):
        interval = super().tick(*args, **kwargs)
        heartbeat("beat", f"beat@{socket.gethostname()}")
        return interval
