"""Settings for the test suite: embedded defaults unless DATABASE_URL / REDIS_URL are set."""

import os

# Before base reads it: each test run gets its own embedded Redis (var/test-redis-<pid>.sock),
# never the demo shop's, and two runs at once do not stop each other's server.
os.environ.setdefault("STARMALL_EMBEDDED_REDIS", f"test-redis-{os.getpid()}")

from .base import *  # noqa: E402,F401,F403
from .base import CACHES, _check  # noqa: E402

DEBUG = False
SECRET_KEY = "test-secret-key"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Two test runs may share one Redis and one PostgreSQL server (a developer and CI, or two
# terminals): keys, queues and the test database carry this run's id so they never collide.
# (inherited by the Celery workers the fault tests start, so they listen on this run's queues)
RUN_ID = os.environ.setdefault("STARMALL_TEST_RUN_ID", f"t{os.getpid()}")
CACHES["default"]["KEY_PREFIX"] = f"starmall-test-{RUN_ID}"
CELERY_TASK_DEFAULT_QUEUE = f"{RUN_ID}-default"
CELERY_TASK_ROUTES = {
    "apps.payments.tasks.*": {"queue": f"{RUN_ID}-payments"},
    "apps.orders.tasks.followup_*": {"queue": f"{RUN_ID}-followups"},
}
if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": f"test_starmall_{RUN_ID}"}  # noqa: F405
WECHAT_TIMEOUT_SECONDS = 3.0
LOGGING = {"version": 1, "disable_existing_loggers": False}

_check()
MIDDLEWARE = [m for m in MIDDLEWARE if "whitenoise" not in m]  # noqa: F405 (no collected static here)
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
