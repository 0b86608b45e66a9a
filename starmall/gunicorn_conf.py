"""gunicorn's whole configuration: ``gunicorn -c python:starmall.gunicorn_conf starmall.asgi:application``.

Each worker is uvicorn (``starmall/uvicorn_worker.py``) serving the ASGI application: the API and the
chat's WebSocket on one address (``starmall/asgi.py``). ``make run``, the fault tests, ``make bench`` and
docs/DEPLOY.md all start the web server with this one file, so tuning it here changes every one of them.
The defaults are the model measured best for a 2-core machine with PostgreSQL on the same host
(docs/PERFORMANCE.md); the environment overrides each: ``WEB_BIND``, ``WEB_WORKERS``, ``WEB_THREADS``,
``WEB_TIMEOUT``, ``WEB_ACCESS_LOG``, ``WEB_SWITCH_INTERVAL_MS`` (docs/DEPLOY.md §7). The proxies whose
``X-Forwarded-*`` headers are believed: ``TRUSTED_PROXIES`` (default none; ``starmall/proxies.py``).
"""

import os

bind = os.environ.get("WEB_BIND", "127.0.0.1:8000")  # behind nginx keep it local
worker_class = "starmall.uvicorn_worker.ShopUvicornWorker"
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))  # read by starmall/asgi.py (the HTTP thread pool)
# The mini-program keeps its HTTPS connection open between taps; keep it open here too.
keepalive = 5
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))  # seconds a request may take before its worker is replaced
graceful_timeout = 5  # seconds a stopping worker may finish its requests
# "-": stdout (the supervisor's log); empty: none, gunicorn's own default. Behind nginx its access
# log is the record, and uvicorn's cost the notification storm about a tenth of its CPU.
accesslog = os.environ.get("WEB_ACCESS_LOG", "") or None
errorlog = "-"
control_socket_disable = True  # no gunicornc socket in the working directory
# gunicorn's copy of the list (its own default would believe 127.0.0.1); the workers read it
# from TRUSTED_PROXIES themselves (starmall/uvicorn_worker.py).
forwarded_allow_ips = os.environ.get("TRUSTED_PROXIES", "")


def post_fork(server, worker):
    """Each worker hands the GIL over after ``WEB_SWITCH_INTERVAL_MS`` instead of Python's 5 ms.

    A worker's threads (the event loop and ``WEB_THREADS`` request threads) take turns on one
    GIL. In a flash sale the thread that holds the hot SKU row's lock in PostgreSQL needs the
    GIL twice more before it commits; with 5 ms slices it waits behind CPU-bound neighbours
    while every other buyer waits on its row lock. Half a millisecond measured slightly better
    on 2 cores: in alternating runs 243 and 249 attempts/s against 239 and 226 with 5 ms for a
    plain SKU, 234 and 226 against 202 and 220 for a 秒杀 activity (docs/PERFORMANCE.md);
    the floor app did not change beyond its noise.
    """
    import sys

    sys.setswitchinterval(float(os.environ.get("WEB_SWITCH_INTERVAL_MS", "0.5")) / 1000)
    _exit_with_the_master(worker)


def post_worker_init(worker):
    """Once the worker has loaded Django, freeze what it allocated so far out of the garbage
    collector's reach (``gc.freeze``): a full collection then walks only what requests made since,
    not the whole of Django, DRF and the apps. Measured with ``gc.callbacks`` in ``make bench``:
    full collections of 88-176 ms in each web worker in its first seconds, which a 秒杀 opening
    or a notification storm right after a start would wait through."""
    import gc

    gc.collect()
    gc.freeze()


ORPHAN_GRACE_SECONDS = 2  # a worker whose master died finishes what it can in this long, then exits


def _exit_with_the_master(worker) -> None:
    """The worker stops when its master dies, however it dies, and is gone within
    ``ORPHAN_GRACE_SECONDS`` whatever it is doing.

    uvicorn's worker class does not watch its parent as gunicorn's own workers do, and an orphan
    holding the port makes every master the supervisor starts next fail ("Address already in use").
    ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` (Linux, ``starmall.processes``) signals the worker when the
    master's thread that forked it exits; a watchdog thread (:func:`_orphan_watchdog`, also where there
    is no prctl) sends the same SIGTERM on a parent change and ends the worker ``ORPHAN_GRACE_SECONDS``
    later. With the master alive, a normal stop is bounded by the master (``graceful_timeout``, SIGKILL).
    """
    import threading

    from starmall.processes import die_with_parent

    die_with_parent()  # not Linux: the watchdog alone
    # uvicorn's graceful shutdown waits without limit for every connection's task: a refused chat
    # consumer whose channel-layer receive (channels_redis' BZPOPMIN loop) never finishes cancelling
    # would keep an orphan alive. The watchdog's os._exit bounds it.
    threading.Thread(target=_orphan_watchdog, args=(worker,), name="orphan-watchdog", daemon=True).start()


def _orphan_watchdog(worker, poll_seconds: float = 0.2) -> None:
    """Wait until the worker's parent is no longer its master (``worker.ppid``), then stop the
    worker: SIGTERM, and ``os._exit(1)`` after ``ORPHAN_GRACE_SECONDS`` if it is still here."""
    import signal
    import time

    while os.getppid() == worker.ppid:  # also true at once if the master died before this started
        time.sleep(poll_seconds)
    worker.log.warning("Master %s is gone: worker %s stops", worker.ppid, os.getpid())
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(ORPHAN_GRACE_SECONDS)
    worker.log.warning(
        "Worker %s still busy %s s after its master died: exiting now", os.getpid(), ORPHAN_GRACE_SECONDS
    )
    os._exit(1)
