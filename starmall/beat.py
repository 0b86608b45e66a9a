"""Celery beat on several machines: exactly one sends the periodic jobs at a time.

celery-redbeat keeps the schedule (and each job's last run) in Redis; a beat sends only while it
holds the Redis lock ``<prefix>:redbeat::lock``, extended at every tick to ``BEAT_LOCK_TIMEOUT_SECONDS``
(30 s). The others try every ``beat_max_loop_interval`` (5 s), so a dead holder is replaced within that
timeout plus one try, carrying on from the runs recorded in Redis: nothing is sent twice. A beat that
loses the lock (Redis restarted empty) exits and its supervisor restarts it. Every periodic job is safe
to run twice anyway (DESIGN.md). :class:`Scheduler` writes the beat's heartbeat after every tick: only
the sending beat reports, so ``/healthz``'s ``"beat"`` means "a beat is sending".
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
