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
CACHES["default"]["KEY_PREFIX"] = "starmall-test"
CELERY_TASK_DEFAULT_QUEUE = "test-default"
CELERY_TASK_ROUTES = {
    "apps.payments.tasks.*": {"queue": "test-payments"},
    "apps.orders.tasks.followup_*": {"queue": "test-followups"},
}
WECHAT_TIMEOUT_SECONDS = 3.0
LOGGING = {"version": 1, "disable_existing_loggers": False}

_check()
MIDDLEWARE = [m for m in MIDDLEWARE if "whitenoise" not in m]  # noqa: F405 (no collected static here)
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
