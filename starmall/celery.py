"""The Celery app: Redis lists as queues, tasks found in each app's ``tasks.py``."""

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")

app = Celery("starmall")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The worker's heartbeat for /healthz (starmall/heartbeats.py), from the consumer's own loop.
from starmall.heartbeats import WorkerHeartbeat  # noqa: E402

app.steps["consumer"].add(WorkerHeartbeat)


@signals.worker_init.connect
def _below_the_web(**_kwargs) -> None:
    """Lower the worker's CPU priority by ``WORKER_NICE`` before its pool forks (the children
    inherit it): on a machine it shares with the web server, the kernel then gives the cores to
    the requests first — a payment notification or a buyer waiting — and the worker its work
    (applying queued payment results, follow-ups, sweeps) in what is left; on a machine of its
    own it changes nothing. Measured in the notification storm (docs/PERFORMANCE.md)."""
    from django.conf import settings

    if settings.WORKER_NICE > 0:
        os.nice(settings.WORKER_NICE)
