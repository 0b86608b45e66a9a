"""Settings for the test suite: embedded defaults unless DATABASE_URL / REDIS_URL are set."""

import os

# Two test runs may share one Redis and one PostgreSQL server (a developer and CI, or two
# terminals): the embedded Redis, keys, queues and the test database carry this run's id so
# they never collide. Set in the environment so that the Celery workers the fault tests start
# inherit it (and listen on this run's queues); set before base reads STARMALL_EMBEDDED_REDIS.
RUN_ID = os.environ.setdefault("STARMALL_TEST_RUN_ID", f"t{os.getpid()}")
os.environ.setdefault("STARMALL_EMBEDDED_REDIS", f"test-redis-{RUN_ID}")

from .base import *  # noqa: E402,F401,F403
from .base import CACHES, CHANNEL_LAYERS, DATABASES, MIDDLEWARE, STORAGES, _check  # noqa: E402

DEBUG = False
SECRET_KEY = "test-secret-key"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES["default"]["KEY_PREFIX"] = f"starmall-test-{RUN_ID}"
CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = f"starmall-test-{RUN_ID}:asgi"
CELERY_REDBEAT_KEY_PREFIX = f"starmall-test-{RUN_ID}:redbeat:"
CELERY_TASK_DEFAULT_QUEUE = f"{RUN_ID}-default"
CELERY_TASK_ROUTES = {
    "apps.payments.tasks.*": {"queue": f"{RUN_ID}-payments"},
    "apps.orders.tasks.followup_*": {"queue": f"{RUN_ID}-followups"},
}
if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": f"test_starmall_{RUN_ID}"}
# A second connection to the test database stands for a read replica (tests that name it in
# ``databases``: tests/backoffice/test_reporting_replica.py); reports read the primary unless a
# test says otherwise.
DATABASES["replica"] = {**DATABASES["default"], "TEST": {"MIRROR": "default"}}
REPORTING_DATABASE = "default"
WECHAT_TIMEOUT_SECONDS = 3.0
# Alerts: the robot is the session's sandbox (tests/conftest.py points the URL at it); mails go
# to Django's locmem outbox (pytest-django), for this address.
ALERT_EMAILS = ["ops@example.com"]
ALERT_TIMEOUT_SECONDS = 3.0
# django-axes needs the request in authenticate(); the test client's login() passes none.
# tests/accounts/test_admin_lockout.py turns it on (override_settings) to test the lockout.
AXES_ENABLED = False
LOGGING = {"version": 1, "disable_existing_loggers": False}
MIDDLEWARE = [m for m in MIDDLEWARE if "whitenoise" not in m]  # no collected static in tests
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}

_check()

# Uploads and demo pictures of this run go to a temporary folder, not var/media.
import tempfile  # noqa: E402

MEDIA_ROOT = tempfile.mkdtemp(prefix=f"starmall-media-{RUN_ID}-")
