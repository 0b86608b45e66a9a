"""Fixtures of the alert tests: run the queued send tasks as a worker would, send every due alert."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest
from django.utils import timezone


@pytest.fixture
def run_queued_alerts():
    """``run_queued_alerts()``: pop every ``alert_send`` task off this run's default queue (a
    Redis list, oldest first) and run it as the worker would; returns the statuses."""
    from django.conf import settings
    from django_redis import get_redis_connection

    from apps.alerts.tasks import alert_send

    def run() -> list[str]:
        r = get_redis_connection("default")
        statuses = []
        while (raw := r.rpop(settings.CELERY_TASK_DEFAULT_QUEUE)) is not None:
            message = json.loads(raw)
            assert message["headers"]["task"] == "apps.alerts.tasks.alert_send"
            args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            statuses.append(alert_send(*args))
        return statuses

    return run


@pytest.fixture
def send_alerts():
    """``send_alerts(minutes=2)``: beat's sweep as it runs ``minutes`` from now -> its counts."""
    from apps.alerts.services import alerts_sweep

    return lambda minutes=2: alerts_sweep(now=timezone.now() + dt.timedelta(minutes=minutes))
