"""Redis (cache, API tokens, order drafts, the chat's channel layer) and Celery's broker and workers.

Every value from the environment (docs/DEPLOY.md §7); with no ``REDIS_URL`` the embedded Redis on
``var/redis.sock``.
"""

import environ
from django.core.exceptions import ImproperlyConfigured

from starmall import embedded_redis, redis_urls

VAR_DIR = embedded_redis.VAR_DIR

env = environ.Env()

# --- Redis: cache, API tokens, order drafts, Celery queues -----------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
EMBEDDED_REDIS = not REDIS_URL
# The one Redis every client uses (the embedded one over its unix socket), in redis-py's form.
_REDIS = f"unix://{embedded_redis.socket_path()}?db=0" if EMBEDDED_REDIS else REDIS_URL
# REDIS_URL may name a Redis Sentinel group (sentinel://h1:26379,h2:26379/<master>/<db>): each
# client below gets its own form of it (starmall/redis_urls.py).
try:
    _sentinel = redis_urls.parse(REDIS_URL)
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
CACHE_REDIS_URL, _cache_sentinel_options = redis_urls.cache_settings(_REDIS)
CELERY_BROKER_URL, _broker_sentinel_options = redis_urls.broker_settings(_REDIS)

CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": CACHE_REDIS_URL,
        "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="starmall"),
        "OPTIONS": {
            "CLIENT_CLASS": "starmall.cache_client.ProcessWideClient",  # one redis-py client per process
            "SOCKET_CONNECT_TIMEOUT": 2,
            "SOCKET_TIMEOUT": 2,
            **_cache_sentinel_options,
        },
    }
}

# The chat's channel layer (Django Channels): groups of sockets shared by every ASGI process,
# on the same Redis (the embedded one over its unix socket); its keys carry the cache prefix.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # socket_timeout above channels-redis's 5 s BZPOPMIN: redis-py 8 defaults it to 5 s,
            # which made every idle chat socket fail after 5 s (django/channels_redis#422).
            "hosts": [
                {
                    **redis_urls.channel_layer_host(_REDIS),
                    "socket_timeout": 30,
                    "socket_connect_timeout": 5,
                }
            ],
            "prefix": env.str("CACHE_KEY_PREFIX", default="starmall") + ":asgi",
            "capacity": 200,
            "expiry": 30,
        },
    }
}


# --- Celery (the slow follow-ups and the periodic jobs) --------------------------------------
CELERY_TIMEZONE = "Asia/Shanghai"
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "apps.payments.tasks.*": {"queue": "payments"},
    "apps.orders.tasks.followup_*": {"queue": "followups"},
}
# A task is acknowledged only when it finished; a worker that dies mid-task leaves it on the
# Redis list for another worker. Handlers are idempotent, so running twice is harmless.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# The worker's CPU priority below the web's on a shared machine (os.nice, starmall/celery.py):
# under a burst the kernel serves the requests WeChat and the buyers wait on first, and the
# worker catches up in the gaps (docs/PERFORMANCE.md). 0: the same priority as the web.
WORKER_NICE = env.int("WORKER_NICE", default=10)
# Socket timeouts: a hung Redis must fail a publish quickly, not hold a request (starmall.dispatch).
# Keepalive and a health check every 10 s find a connection that a Redis restart left dead.
# max_retries 0: a publisher (a request, a notification) opening a broker connection fails at
# once instead of retrying for broker_connection_timeout; worker and beat pass their own
# (broker_connection_max_retries, below) and keep reconnecting.
# visibility_timeout: a message a worker took and never acknowledged (its machine died) goes back
# on the queue this long after it was taken. It must exceed the slowest task's run, or a task
# still running is handed to a second worker: the slowest is a day's reconciliation (download
# the bill, WECHAT_TIMEOUT_SECONDS per call, compare; well under a minute at 10k payments a day).
# A coupon issue to a very large audience can run longer, but it resumes from its cursor and is
# safe to run twice at once. No task is queued with a countdown or eta (a Redis broker would
# redeliver one longer than this). 5 minutes: a dead worker's message is back in minutes.
BROKER_VISIBILITY_TIMEOUT_SECONDS = env.int("BROKER_VISIBILITY_TIMEOUT_SECONDS", default=300)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": BROKER_VISIBILITY_TIMEOUT_SECONDS,
    "socket_timeout": 2,
    "socket_connect_timeout": 2,
    "socket_keepalive": True,
    "health_check_interval": 10,
    "max_retries": 0,
}
CELERY_BROKER_TRANSPORT_OPTIONS.update(_broker_sentinel_options)
CELERY_TASK_PUBLISH_RETRY = False
# Workers and beat outlive Redis: reconnect for ever (2 s, 4 s, ... at most 10 s apart), at
# start-up too; a task running when the connection drops is cancelled and, acked late,
# redelivered (handlers are idempotent). If a worker exits anyway, the supervisor restarts it.
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_CONNECTION_TIMEOUT = 4
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Beat may run on every machine: celery-redbeat keeps the schedule in Redis and only the holder
# of its Redis lock sends; the others try for the lock every BEAT_MAX_LOOP_INTERVAL seconds, and
# the holder's lock lapses BEAT_LOCK_TIMEOUT_SECONDS after its machine dies (starmall/beat.py).
CELERY_BEAT_SCHEDULER = "starmall.beat:Scheduler"
CELERY_BEAT_MAX_LOOP_INTERVAL = 5
CELERY_REDBEAT_LOCK_TIMEOUT = env.int("BEAT_LOCK_TIMEOUT_SECONDS", default=30)
CELERY_REDBEAT_KEY_PREFIX = env.str("CACHE_KEY_PREFIX", default="starmall") + ":redbeat:"
CELERY_REDBEAT_REDIS_URL, _redbeat_options = redis_urls.redbeat_settings(
    CACHE_REDIS_URL if not _sentinel else REDIS_URL
)
CELERY_REDBEAT_REDIS_OPTIONS = {
    "socket_timeout": 5,
    "socket_connect_timeout": 5,
    "health_check_interval": 10,
    **_redbeat_options,
}
