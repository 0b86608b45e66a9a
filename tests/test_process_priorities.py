"""The web workers and the Celery worker on one machine: what each process sets for itself at
start (``starmall/gunicorn_conf.py``, ``starmall/celery.py``) so that a burst of requests is not
slowed by the worker's work or by the web worker's own start-up garbage."""

from __future__ import annotations

import gc
import importlib
import os

import pytest

from starmall import celery as shop_celery


@pytest.mark.parametrize(("setting", "calls"), [(10, [10]), (0, [])])
def test_the_worker_lowers_its_cpu_priority_by_worker_nice_before_its_pool_forks(settings, monkeypatch, setting, calls):
    settings.WORKER_NICE = setting
    niced = []
    monkeypatch.setattr(os, "nice", lambda increment: niced.append(increment) or increment)
    shop_celery._below_the_web(sender=None)  # worker_init's receiver (connected: the test below)
    assert niced == calls


def test_a_web_worker_freezes_what_it_loaded_out_of_the_collectors_reach():
    from starmall import gunicorn_conf

    try:
        gunicorn_conf.post_worker_init(worker=None)
        assert gc.get_freeze_count() > 10_000  # Django, DRF and the apps
    finally:
        gc.unfreeze()


@pytest.mark.parametrize(("value", "accesslog"), [(None, None), ("", None), ("-", "-"), ("/var/log/x", "/var/log/x")])
def test_uvicorns_access_log_is_off_unless_asked_for(monkeypatch, value, accesslog):
    if value is None:
        monkeypatch.delenv("WEB_ACCESS_LOG", raising=False)
    else:
        monkeypatch.setenv("WEB_ACCESS_LOG", value)
    from starmall import gunicorn_conf

    try:
        assert importlib.reload(gunicorn_conf).accesslog == accesslog
    finally:
        monkeypatch.undo()
        importlib.reload(gunicorn_conf)


def test_the_celery_app_connects_the_priority_hook():
    from celery import signals

    assert any(
        getattr(receiver(), "__name__", None) == shop_celery._below_the_web.__name__
        for _key, receiver in signals.worker_init.receivers
    )
