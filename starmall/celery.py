"""The Celery app: Redis lists as queues, tasks found in each app's ``tasks.py``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")

app = Celery("starmall")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The worker's heartbeat for /healthz (starmall/heartbeats.py), from the consumer's own loop.
from starmall.heartbeats import WorkerHeartbeat  # noqa: E402

app.steps["consumer"].add(WorkerHeartbeat)
