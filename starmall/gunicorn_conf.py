"""gunicorn configuration for Starmall: ``gunicorn -c starmall/gunicorn_conf.py starmall.wsgi``.

``make run`` (``manage.py runshop``) serves with exactly this file, and so should a shop in
production. The defaults are the model measured best for a 2-core machine with PostgreSQL on
the same host (README "Benchmarks"); the environment can override each of them:

| variable | default | meaning |
| --- | --- | --- |
| ``WEB_BIND`` | ``127.0.0.1:8000`` | address to listen on |
| ``WEB_WORKERS`` | 2 | worker processes |
| ``WEB_THREADS`` | 4 | threads per worker (gthread) |
| ``WEB_ACCESS_LOG`` | ``-`` | access log file (``-``: stdout, empty: none) |
"""

import os

bind = os.environ.get("WEB_BIND", "127.0.0.1:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))
# The mini-program keeps its HTTPS connection open between taps; keep it open here too.
keepalive = 5
graceful_timeout = 5
timeout = 30
control_socket_disable = True
accesslog = os.environ.get("WEB_ACCESS_LOG", "-") or None
