"""gunicorn's whole configuration: ``gunicorn -c python:starmall.gunicorn_conf starmall.asgi:application``.

Each worker is uvicorn (``starmall/uvicorn_worker.py``) serving the ASGI application: the API
(Django's WSGI path in a thread pool of ``WEB_THREADS`` threads, ``starmall/asgi.py``) and the
chat's WebSocket ``/ws/chat/...`` on the same address, as a mini-program's ``wx.connectSocket``
needs.

``make run`` (``manage.py runshop``), the fault tests, ``make bench`` and the deployment guide
(docs/DEPLOY.md) all start the web server with this one file, so tuning it here changes every
one of them. The defaults are the model measured best for a 2-core machine with PostgreSQL on
the same host (docs/PERFORMANCE.md); the environment can override each of them:

| variable | default | meaning |
| --- | --- | --- |
| ``WEB_BIND`` | ``127.0.0.1:8000`` | address to listen on (behind nginx keep it local) |
| ``WEB_WORKERS`` | 2 | worker processes |
| ``WEB_THREADS`` | 4 | threads per worker running HTTP requests (a2wsgi's pool, ``starmall/asgi.py``) |
| ``WEB_TIMEOUT`` | 30 | seconds a request may take before its worker is replaced |
| ``WEB_ACCESS_LOG`` | empty | access log file (``-``: stdout, the supervisor's log; empty: none, gunicorn's own default — behind nginx its access log is the record; uvicorn's cost the notification storm about a tenth of its CPU, docs/PERFORMANCE.md) |
| ``WEB_SWITCH_INTERVAL_MS`` | 0.5 | how long a thread may hold the GIL before another runnable thread of the worker gets it (Python's default is 5 ms; see below) |

Which proxies' ``X-Forwarded-For`` / ``X-Forwarded-Proto`` are believed is ``TRUSTED_PROXIES``
(default: none), one list for the uvicorn workers and the app (``starmall/proxies.py``).
"""

import os

bind = os.environ.get("WEB_BIND", "127.0.0.1:8000")
worker_class = "starmall.uvicorn_worker.ShopUvicornWorker"
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))  # read by starmall/asgi.py (the HTTP thread pool)
# The mini-program keeps its HTTPS connection open between taps; keep it open here too.
keepalive = 5
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = 5  # seconds a stopping worker may finish its requests
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

    uvicorn's worker class does not watch its parent as gunicorn's own workers do: after a
    ``kill -9`` of the master its workers lived on holding the port, and every master the
    supervisor started next failed with "Address already in use". Two parts:

    - ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` (Linux, ``starmall.processes``): the kernel signals the worker the moment
      the master's thread that forked it (gunicorn's main thread) exits. uvicorn then stops
      accepting, closes the listening socket and finishes its requests.
    - a watchdog thread, because that graceful shutdown waits without limit for every
      connection's task: a chat consumer refused with 4401/4403 whose channel-layer receive
      never finished its cancellation (channels_redis' BZPOPMIN loop) kept its worker alive,
      with parent 1, until the whole run stopped. The watchdog notices the parent change
      (``getppid``, also where there is no prctl), sends the same SIGTERM, and
      ends the worker (``os._exit``) ``ORPHAN_GRACE_SECONDS`` later. With the master alive, a normal
      stop is bounded by the master itself (``graceful_timeout``, then SIGKILL).
    """
    import threading

    from starmall.processes import die_with_parent

    die_with_parent()  # not Linux: the watchdog alone
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
