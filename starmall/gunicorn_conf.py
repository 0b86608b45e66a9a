"""gunicorn's whole configuration: ``gunicorn -c python:starmall.gunicorn_conf starmall.wsgi``.

``make run`` (``manage.py runshop``), the fault tests and the deployment guide (docs/DEPLOY.md)
all start the web server with this one file, so tuning it here changes every one of them.
Values that differ per machine come from the environment:

- ``WEB_BIND`` — address to listen on (default ``127.0.0.1:8000``; behind nginx keep it local);
- ``WEB_WORKERS`` / ``WEB_THREADS`` — processes x threads (default 2 x 4: 8 requests at once);
- ``WEB_TIMEOUT`` — seconds a request may take before its worker is replaced (default 30).
"""

import os

bind = os.environ.get("WEB_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = 5  # seconds a stopping worker may finish its requests
accesslog = "-"  # access log on stdout (the supervisor's log)
errorlog = "-"
control_socket_disable = True  # no gunicornc socket in the working directory
forwarded_allow_ips = os.environ.get("WEB_FORWARDED_ALLOW_IPS", "127.0.0.1")  # nginx on the same host
