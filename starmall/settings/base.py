"""Settings shared by every environment.

Every value in DESIGN.md's configuration list is read from the environment through
django-environ; defaults give a newcomer a working shop (SQLite under ``var/``, the embedded
Redis, the local WeChat sandbox). :func:`_check` stops start-up on bad configuration.
"""

from pathlib import Path
from urllib.parse import urlsplit

import environ
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from django.templatetags.static import static

from starmall import embedded_redis, redis_urls
from starmall.media_storage import MediaStorageError
from starmall.media_storage import from_environ as media_storage_from_environ
from starmall.proxies import from_environ as trusted_proxies_from_environ
from starmall.public_secrets import default as _public

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = embedded_redis.VAR_DIR

env = environ.Env()

DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
# Public base URL (the WeChat notify_url is built from it); locally: where make run binds web.
SITE_URL = env.str("SITE_URL", default="http://" + env.str("WEB_BIND", default="127.0.0.1:8000")).rstrip("/")
_site = urlsplit(SITE_URL)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[f"{_site.scheme}://{_site.netloc}"])
# False under production settings: runshop (make run) then refuses demo data and the demo login.
DEMO_SHOP_ALLOWED = True

INSTALLED_APPS = [
    "unfold.apps.BasicAppConfig",  # the admin theme (BasicAppConfig: admin.site stays ours); (before django.contrib.admin: its templates win)
    "apps.backoffice.apps.ShopAdminConfig",  # django.contrib.admin with the shop's site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served locally: /api/docs/ works offline
    "starmall",
    "apps.alerts",  # bottom layer: imports no other app, every app may raise an alert
    "apps.files",
    "apps.accounts",
    "apps.catalog",
    "apps.appointments",
    "apps.marketing",
    "apps.shipping",
    "apps.content",  # home page blocks, articles, favourites
    "apps.orders",
    "apps.payments",
    "apps.stores",  # self-pickup stores, their staff, pickup verification
    "apps.almanac",
    "apps.reviews",
    "apps.backoffice",
    "apps.chat",
    "apps.distribution",  # above payments and stores, below chat/reviews/backoffice (referrals, commissions, withdrawals)
    "apps.wechat_official",  # the official account (公众号): server, replies, menus, materials, mass sends
    "apps.backoffice.apps.AxesConfig",  # admin login lockout (django-axes, named in Chinese); last, as its docs ask
]

MIDDLEWARE = [
    "starmall.api.middleware.ClientAddressMiddleware",  # REMOTE_ADDR: the client behind TRUSTED_PROXIES
    "django.middleware.security.SecurityMiddleware",
    "starmall.api.middleware.BodySizeLimitMiddleware",  # 413 before anything reads the body
    "starmall.api.middleware.ServiceUnavailableMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "starmall.pages.NotFoundPageMiddleware",  # DEBUG only: the Chinese 404 page, not Django's debug page
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # the lockout page for a locked-out admin login
]

ROOT_URLCONF = "starmall.urls"
WSGI_APPLICATION = "starmall.wsgi.application"
ASGI_APPLICATION = "starmall.asgi.application"  # what make run serves: HTTP and the chat's WebSocket

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASES = {"default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'starmall.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # One file shared by the web server, the worker and beat: WAL lets readers run beside a
    # writer, IMMEDIATE takes the write lock at BEGIN (no upgrade deadlocks) and the timeout
    # makes a writer wait for another instead of failing with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # Behind PgBouncer in transaction mode: a server-side cursor (.iterator(), the exports) is
    # declared on one server connection and fetched on another; set this to read results client-
    # side instead (docs/DEPLOY.md, tests/faults/test_nodes_pgbouncer.py).
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool(
        "DATABASE_DISABLE_SERVER_SIDE_CURSORS", default=False
    )
# Services own their transactions; a request-wide one would wrap WeChat calls (STYLE.md).
DATABASES["default"]["ATOMIC_REQUESTS"] = False
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: cache, API tokens, order drafts, Celery queues -----------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
EMBEDDED_REDIS = not REDIS_URL
if EMBEDDED_REDIS:
    _sock = embedded_redis.socket_path()
    CACHE_REDIS_URL = f"unix://{_sock}?db=0"
    CELERY_BROKER_URL = f"redis+socket://{_sock}?virtual_host=0"
else:
    CACHE_REDIS_URL = REDIS_URL
    CELERY_BROKER_URL = REDIS_URL
# REDIS_URL may name a Redis Sentinel group (sentinel://h1:26379,h2:26379/<master>/<db>): each
# client below gets its own form of it (starmall/redis_urls.py).
try:
    _sentinel = redis_urls.parse(REDIS_URL)
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
CACHE_REDIS_URL, _cache_sentinel_options = redis_urls.cache_settings(CACHE_REDIS_URL)
CELERY_BROKER_URL, _broker_sentinel_options = redis_urls.broker_settings(CELERY_BROKER_URL)

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
                    **redis_urls.channel_layer_host(
                        f"unix://{embedded_redis.socket_path()}?db=0" if EMBEDDED_REDIS else REDIS_URL
                    ),
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
# Seconds between the sweeps that make the database, not the broker, the source of truth
# (unpaid timeouts, refunds, uncertain payments; follow-ups at twice this). Tests shorten it.
BEAT_SWEEP_SECONDS = env.int("BEAT_SWEEP_SECONDS", default=60)
# The unpaid timeout has no per-order countdown message: an order's pay_deadline is its timer
# and this sweep (an indexed query on status, pay_deadline) cancels what is due, at most this
# many seconds late; WeChat refuses the payment itself after time_expire.
ORDER_EXPIRE_SWEEP_SECONDS = env.int("ORDER_EXPIRE_SWEEP_SECONDS", default=min(15, BEAT_SWEEP_SECONDS))
CELERY_BEAT_SCHEDULE = {
    "slots-generate": {
        "task": "apps.appointments.tasks.slots_generate",
        "schedule": 8 * 3600,
    },
    "orders-expire-unpaid": {
        "task": "apps.orders.tasks.orders_expire_due",
        "schedule": ORDER_EXPIRE_SWEEP_SECONDS,
    },
    "orders-complete-consultations": {
        "task": "apps.orders.tasks.orders_complete_consultations",
        "schedule": 3600,
    },
    "refunds-sweep": {
        "task": "apps.payments.tasks.refunds_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "refund-batches-sweep": {
        "task": "apps.payments.tasks.refund_batches_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "payments-check-uncertain": {
        "task": "apps.payments.tasks.payments_check_uncertain",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "payments-reconcile-daily": {
        "task": "apps.payments.tasks.reconcile_daily",
        "schedule": crontab(hour=10, minute=30),
    },
    "followups-redispatch": {
        "task": "apps.orders.tasks.followups_redispatch",
        "schedule": 2 * BEAT_SWEEP_SECONDS,
    },
    "orders-auto-receive": {
        "task": "apps.orders.tasks.orders_auto_receive",
        "schedule": 600,
    },
    # The sold-out gate trusts a token Redis knows: a deactivation whose revocation failed (Redis
    # down) or that bypassed the ORM (SQL) is at most this late (apps/accounts/revocations.py).
    "tokens-revoke-sweep": {
        "task": "apps.accounts.tasks.tokens_revoke_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "points-release-due": {
        "task": "apps.accounts.tasks.points_release_due",
        "schedule": 600,
    },
    "recharges-expire-due": {
        "task": "apps.payments.tasks.recharges_expire_due",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "coupon-issues-redispatch": {
        "task": "apps.marketing.tasks.coupon_issues_redispatch",
        "schedule": 2 * BEAT_SWEEP_SECONDS,
    },
    "consultation-reminders": {
        "task": "apps.chat.tasks.consultation_reminders",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "chat-notices-resend": {
        "task": "apps.chat.tasks.chat_notices_resend",
        "schedule": 2 * BEAT_SWEEP_SECONDS,
    },
    "alerts-sweep": {
        "task": "apps.alerts.tasks.alerts_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    # Article views wait in Redis (one HINCRBY per view) until this adds them to the rows.
    "article-views-flush": {
        "task": "apps.content.tasks.article_views_flush",
        "schedule": env.int("ARTICLE_VIEWS_FLUSH_SECONDS", default=300),
    },
    # 拼团 groups past their deadline fail and their refunds are requested within a minute.
    "groups-end-due": {
        "task": "apps.payments.tasks.groups_end_due",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "bargains-expire-due": {
        "task": "apps.marketing.tasks.bargains_expire_due",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "official-mass-batches-sweep": {
        "task": "apps.wechat_official.tasks.mass_batches_sweep",
        "schedule": 4 * BEAT_SWEEP_SECONDS,
    },
    "commissions-release-due": {
        "task": "apps.distribution.tasks.commissions_release_due",
        "schedule": 600,
    },
    "transfers-sweep": {  # merchant transfers: send new ones, query unknown/unconfirmed ones, alert stuck ones
        "task": "apps.distribution.tasks.transfers_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "transfers-reconcile-daily": {  # yesterday's merchant transfers queried and compared, beside the bill
        "task": "apps.distribution.tasks.transfers_reconcile",
        "schedule": crontab(hour=10, minute=40),
    },
}
# Re-sent WeChat payment notifications the ASGI gate answered wait in Redis for their audit rows
# (apps/payments/notify_duplicates.py); this writes them, at most this many seconds late.
NOTIFY_DUPLICATES_FLUSH_SECONDS = env.int("NOTIFY_DUPLICATES_FLUSH_SECONDS", default=min(15, BEAT_SWEEP_SECONDS))
CELERY_BEAT_SCHEDULE["notify-duplicates-record"] = {
    "task": "apps.payments.tasks.notify_duplicates_record",
    "schedule": NOTIFY_DUPLICATES_FLUSH_SECONDS,
}
# A payment result's first delivery the gate queued (apps/payments/notify_queue.py) is applied by
# the worker at once; this applies the ones whose task was lost (Redis down, a worker killed).
NOTIFY_QUEUE_SWEEP_SECONDS = env.int("NOTIFY_QUEUE_SWEEP_SECONDS", default=min(15, BEAT_SWEEP_SECONDS))
CELERY_BEAT_SCHEDULE["notifications-queued-sweep"] = {
    "task": "apps.payments.tasks.notifications_queued_sweep",
    "schedule": NOTIFY_QUEUE_SWEEP_SECONDS,
}
# 秒杀: the Redis quotas loaded before a sale starts and reconciled with PostgreSQL while it runs;
# reservations whose draft expired unused give their units back (apps/orders/flash_reservations.py).
FLASH_QUOTA_SWEEP_SECONDS = env.int("FLASH_QUOTA_SWEEP_SECONDS", default=min(30, BEAT_SWEEP_SECONDS))
CELERY_BEAT_SCHEDULE["flash-quotas-reconcile"] = {
    "task": "apps.orders.tasks.flash_quotas_reconcile",
    "schedule": FLASH_QUOTA_SWEEP_SECONDS,
}

# --- Auth, API ------------------------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out login before checking it
    "django.contrib.auth.backends.ModelBackend",
]
# django-axes: AXES_FAILURE_LIMIT wrong passwords for one username from one address lock that
# pair out for AXES_COOLOFF_MINUTES (the right password is refused too; a superuser can reset
# it: `manage.py axes_reset`). The address is the client's (the same as the API throttles'):
# REMOTE_ADDR, or behind one of TRUSTED_PROXIES the address it appended to X-Forwarded-For.
# TRUSTED_PROXIES (comma-separated addresses/networks, default none) is read by the uvicorn
# workers too (starmall/proxies.py), so the web server and the app agree on the client.
try:
    TRUSTED_PROXIES = trusted_proxies_from_environ()
except ValueError as exc:
    raise ImproperlyConfigured(f"TRUSTED_PROXIES: {exc}") from exc
if env.str("TRUSTED_PROXY_COUNT", default="0").strip() not in ("", "0"):
    raise ImproperlyConfigured(
        "TRUSTED_PROXY_COUNT was replaced by TRUSTED_PROXIES: list the proxies' addresses instead "
        "(nginx on this host: TRUSTED_PROXIES=127.0.0.1) and unset TRUSTED_PROXY_COUNT"
    )
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_MINUTES", default=30) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "starmall.api.middleware.client_ip"
AXES_VERBOSE = False
# Wrong pickup codes (自提核销码) one staff login may type in a Shanghai clock hour; past it the
# verify page and command refuse every code until the next hour and one alert is raised.
PICKUP_VERIFY_FAILURES_PER_HOUR = env.int("PICKUP_VERIFY_FAILURES_PER_HOUR", default=20)

# Staff sign in at /admin/login/; without ?next= Django would send them to /accounts/profile/
# (a 404 here): the back office is the only place a login leads to.
LOGIN_URL = "/admin/login/"
LOGIN_REDIRECT_URL = "/admin/"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["apps.accounts.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["starmall.api.parsers.SafeJSONParser"],
    "EXCEPTION_HANDLER": "starmall.api.exceptions.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "starmall.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 20,
    "DEFAULT_SCHEMA_CLASS": "starmall.api.schema.ShopAutoSchema",
    "DEFAULT_THROTTLE_RATES": {
        "login": env.str("THROTTLE_LOGIN", default="20/min"),
        "order_create": env.str("THROTTLE_ORDER_CREATE", default="30/min"),
        "upload": env.str("THROTTLE_UPLOAD", default="30/min"),
    },
    "UNAUTHENTICATED_USER": None,
    # Throttles key anonymous clients by REMOTE_ADDR, already the client's address
    # (ClientAddressMiddleware, TRUSTED_PROXIES). DRF's default (None) believes any
    # X-Forwarded-For, so a client could pick a new "address" per request; 0 ignores the header.
    "NUM_PROXIES": 0,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Starmall mini-program API",
    "DESCRIPTION": "The contract in docs/API.md: goods, consultation slots, WeChat Pay, almanac.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "PayMethodEnum": "apps.orders.models.PayMethod",
        # coupons' kind and scope, a recharge's status (names that other enums use too)
        "KindEnum": "apps.catalog.models.Kind",  # goods / consultation keeps its name beside the coupons' kind
        "CouponKindEnum": "apps.marketing.models.CouponTemplate.Kind",  # = accounts Coupon.Kind
        "CouponScopeEnum": "apps.marketing.models.CouponTemplate.Scope",
        "RechargeStatusEnum": "apps.payments.models.Recharge.Status",
        "GroupStatusEnum": "apps.marketing.models_growth.Group.Status",  # a 拼团 group: forming / done / failed
    },
    # The strict path converters of starmall/api/converters.py, as the schema states them.
    "PATH_CONVERTER_OVERRIDES": {
        "order_no": {"type": "string", "pattern": "^[0-9A-Za-z_-]{1,32}$"},
        "plain": {"type": "string", "pattern": "^[0-9A-Za-z_-]{1,32}$"},
        "id": {"type": "integer", "minimum": 1, "maximum": 2**53},
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
AUTH_TOKEN_TTL_SECONDS = env.int("AUTH_TOKEN_TTL_SECONDS", default=7 * 24 * 3600)
# Largest API request body in bytes (Content-Length), else 413 payload_too_large.
API_MAX_BODY_BYTES = env.int("API_MAX_BODY_BYTES", default=1024 * 1024)
# pay-status asks WeChat (orderquery) about one order at most once per this many seconds.
PAY_STATUS_QUERY_INTERVAL_SECONDS = env.int("PAY_STATUS_QUERY_INTERVAL_SECONDS", default=10)
# Unsigned, badly signed or unparsable notifications: counted per day; the first N of a day are
# kept as samples with the body cut to this many characters (admin: Notifications).
INVALID_NOTIFICATION_SAMPLES = env.int("INVALID_NOTIFICATION_SAMPLES", default=20)
INVALID_NOTIFICATION_SAMPLE_CHARS = env.int("INVALID_NOTIFICATION_SAMPLE_CHARS", default=2048)

# --- Shop rules -----------------------------------------------------------------------------
ORDER_PAY_TIMEOUT_MINUTES = env.int("ORDER_PAY_TIMEOUT_MINUTES", default=30)
ORDER_DRAFT_TTL_SECONDS = env.int("ORDER_DRAFT_TTL_SECONDS", default=3600)
# PostgreSQL connections per web worker process for creates answered before Django (a 秒杀
# winner's, apps/orders/api/create_gate.py); 0 turns that path off: Django creates every order.
# 8: measured against 4 with the connections opened at start (docs/PERFORMANCE.md): the 64 winners
# of a sale's opening wait less for a connection held across an event-loop turn.
CREATE_GATE_CONNECTIONS = env.int("CREATE_GATE_CONNECTIONS", default=8)
# PostgreSQL connections per web worker process for queuing a payment result's first delivery
# before Django (apps/payments/notify_queue.py); 0 turns that off: Django applies it in the request.
NOTIFY_GATE_CONNECTIONS = env.int("NOTIFY_GATE_CONNECTIONS", default=2)
POINT_VALUE_FEN = env.int("POINT_VALUE_FEN", default=1)  # fen one point is worth
# Minutes a recharge (top-up) can be paid; sent to WeChat as time_expire (apps/payments/recharges.py).
RECHARGE_PAY_MINUTES = env.int("RECHARGE_PAY_MINUTES", default=30)
# Full refunds of paid consultations whose slot is more than this many hours away are
# approved without staff (0: every refund waits for staff).
REFUND_AUTO_APPROVE_HOURS = env.int("REFUND_AUTO_APPROVE_HOURS", default=24)
SMS_BACKEND = env.str("SMS_BACKEND", default="apps.orders.sms.LogSmsBackend")
# Points an order earns stay frozen until it completes plus this many days (API.md Additions).
POINTS_FREEZE_DAYS = env.int("POINTS_FREEZE_DAYS", default=7)
# Per-customer caps against hoarding stock and slots (API.md Additions; 409 limit_exceeded).
MAX_UNPAID_ORDERS = env.int("MAX_UNPAID_ORDERS", default=3)
MAX_UNPAID_CONSULTATIONS = 1
# 砍价: records one customer may help per Shanghai day (API.md "Bargaining").
BARGAIN_HELPS_PER_DAY = env.int("BARGAIN_HELPS_PER_DAY", default=3)
# A slot can be booked (and paid) only until this many minutes before it starts.
BOOKING_MIN_NOTICE_MINUTES = env.int("BOOKING_MIN_NOTICE_MINUTES", default=120)
SLOT_HOURS = (9, 11, 13, 15, 17, 19)  # start hours, Shanghai time (DESIGN.md flow 9)
SLOT_LENGTH_MINUTES = 60
SLOT_DAYS_AHEAD = 8
# Consultations: chat messages per user per minute (socket and HTTP; else 429 /
# an error frame); an offline side gets one "new message" notice per quiet period.
CHAT_MESSAGES_PER_MINUTE = env.int("CHAT_MESSAGES_PER_MINUTE", default=20)
CHAT_NOTICE_QUIET_MINUTES = env.int("CHAT_NOTICE_QUIET_MINUTES", default=10)
# Reminders (subscription messages) this many hours before each booked slot, once each.
try:
    REMINDER_HOURS = sorted({int(h) for h in env.list("REMINDER_HOURS", default=["24", "1"]) if str(h).strip()})
except ValueError:
    REMINDER_HOURS = [0]  # refused by _check with a clear message
# A paid consultation can be moved to another slot until this many hours before the old one.
RESCHEDULE_MIN_NOTICE_HOURS = env.int("RESCHEDULE_MIN_NOTICE_HOURS", default=24)

# --- WeChat (mini-program login + WeChat Pay V2) ---------------------------------------------
# The defaults are the local sandbox's demo credentials (secrets: starmall/public_secrets.py).
# WECHAT_SANDBOX_PORT moves the sandbox and both default bases at once (make run starts the
# sandbox on whatever loopback http base the shop is given; see runshop.sandbox_address).
WECHAT_SANDBOX_PORT = env.int("WECHAT_SANDBOX_PORT", default=8001)
SANDBOX_BASE = f"http://127.0.0.1:{WECHAT_SANDBOX_PORT}/"
# The shop's name at the head of WeChat Pay's ``body`` ("商家名称-销售商品类目"), which the
# customer reads on the payment screen and in their WeChat bill.
SHOP_NAME = env.str("SHOP_NAME", default="星商城")
WECHAT_APPID = env.str("WECHAT_APPID", default="wx8d5f3c1a2b4e6f70")
WECHAT_APP_SECRET = env.str("WECHAT_APP_SECRET", default=_public("WECHAT_APP_SECRET"))
WECHAT_MCH_ID = env.str("WECHAT_MCH_ID", default="1900000109")
WECHAT_PAY_API_KEY = env.str("WECHAT_PAY_API_KEY", default=_public("WECHAT_PAY_API_KEY"))
WECHAT_API_BASE = env.str("WECHAT_API_BASE", default=SANDBOX_BASE)
WECHAT_PAY_API_BASE = env.str("WECHAT_PAY_API_BASE", default=SANDBOX_BASE)
WECHAT_MCH_CERT = env.str("WECHAT_MCH_CERT", default="")  # PEM path, needed for refunds
WECHAT_MCH_KEY = env.str("WECHAT_MCH_KEY", default="")
WECHAT_TIMEOUT_SECONDS = env.float("WECHAT_TIMEOUT_SECONDS", default=5.0)
WECHAT_SUBSCRIBE_TEMPLATE_PAID = env.str("WECHAT_SUBSCRIBE_TEMPLATE_PAID", default="order-paid")
WECHAT_SUBSCRIBE_TEMPLATE_CHAT = env.str("WECHAT_SUBSCRIBE_TEMPLATE_CHAT", default="chat-message")
WECHAT_SUBSCRIBE_TEMPLATE_REMINDER = env.str("WECHAT_SUBSCRIBE_TEMPLATE_REMINDER", default="consultation-reminder")
# The server's own address, sent as spbill_create_ip (WECHAT.md: always pass client_ip).
WECHAT_SPBILL_CREATE_IP = env.str("WECHAT_SPBILL_CREATE_IP", default="127.0.0.1")

# --- Logistics (apps.logistics: shipping carriers, parcel tracking) -------------------------
# The tracking provider (Kuaidi100's real-time query shape); by default the sandbox served by the
# WeChat sandbox's process (wechat_sandbox/logistics.py). Production: https://poll.kuaidi100.com/
# and the account's customer id and key.
LOGISTICS_PROVIDER = env.str("LOGISTICS_PROVIDER", default="apps.logistics.providers.Kuaidi100Provider")
LOGISTICS_API_BASE = env.str("LOGISTICS_API_BASE", default=SANDBOX_BASE)
LOGISTICS_CUSTOMER = env.str("LOGISTICS_CUSTOMER", default="STARMALLSANDBOX")
LOGISTICS_KEY = env.str("LOGISTICS_KEY", default=_public("LOGISTICS_KEY"))
LOGISTICS_TIMEOUT_SECONDS = env.float("LOGISTICS_TIMEOUT_SECONDS", default=5.0)
LOGISTICS_CACHE_SECONDS = env.int("LOGISTICS_CACHE_SECONDS", default=600)
# Shipped goods orders complete by themselves this many days after shipping (API.md Additions).
AUTO_RECEIVE_DAYS = env.int("AUTO_RECEIVE_DAYS", default=10)
WECHAT_SUBSCRIBE_TEMPLATE_SHIPPED = env.str("WECHAT_SUBSCRIBE_TEMPLATE_SHIPPED", default="order-shipped")

# --- Alerts (apps.alerts): MANUAL payments, FAILED refunds / follow-ups, reconciliation ------
# Each problem is recorded once and sent to every backend here (dotted paths; docs/BACKOFFICE.md "Alerts").
# Development: the enterprise-WeChat group robot of the local sandbox (its demo key) and mails
# written to var/mail/ (settings.local); production names its own (settings.production).
ALERT_BACKENDS = env.list(
    "ALERT_BACKENDS",
    default=[
        "apps.alerts.backends.LogBackend",
        "apps.alerts.backends.WeComRobotBackend",
        "apps.alerts.backends.EmailBackend",
    ],
)
SANDBOX_ROBOT_KEY = "5a7c0e1d-2b3f-4c5d-8e9f-0a1b2c3d4e5f"  # wechat_sandbox.DEMO_ROBOT_KEY (no import: production)
ALERT_WECOM_WEBHOOK_URL = env.str(
    "ALERT_WECOM_WEBHOOK_URL", default=f"{SANDBOX_BASE}cgi-bin/webhook/send?key={SANDBOX_ROBOT_KEY}"
)
ALERT_WECOM_MSGTYPE = env.str("ALERT_WECOM_MSGTYPE", default="markdown")  # or "text"
ALERT_EMAILS = env.list("ALERT_EMAILS", default=[])
ALERT_TIMEOUT_SECONDS = env.float("ALERT_TIMEOUT_SECONDS", default=5.0)
# Django's mail (alert mails): EMAIL_URL such as smtp+tls://user:password@smtp.example.com:587
# (django-environ's email_url); development writes mails to files instead (settings.local).
vars().update(env.email_url("EMAIL_URL", default="smtp://localhost:25"))
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Starmall <alerts@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- i18n / time ----------------------------------------------------------------------------
LANGUAGE_CODE = "zh-hans"
TIME_ZONE = "Asia/Shanghai"
USE_I18N = True
# Chinese for what the admin theme (django-unfold) and django-axes ship untranslated.
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["starmall.formats"]  # "2026-12-01 20:00" in the admin
USE_TZ = True

# Uploaded files and demo pictures (apps.files): stored through STORAGES["default"] (local
# FileSystemStorage under MEDIA_ROOT here; a django-storages backend in production), answered as
# absolute URLs. MEDIA_SERVE: Django serves MEDIA_URL itself (development; nginx does it in
# production, docs/DEPLOY.md).
MEDIA_URL = env.str("MEDIA_URL", default="/media/")
MEDIA_ROOT = env.str("MEDIA_ROOT", default=str(VAR_DIR / "media"))
MEDIA_SERVE = env.bool("MEDIA_SERVE", default=True)
# Images: refused above this many pixels (width x height, read from the header before decoding;
# Pillow's own bomb limit is ~89 M), and decoded/re-encoded by at most UPLOAD_DECODE_CONCURRENCY
# uploads at a time per process (the rest queue): decoding costs CPU and memory by pixels.
UPLOAD_MAX_PIXELS = env.int("UPLOAD_MAX_PIXELS", default=20_000_000)
UPLOAD_DECODE_CONCURRENCY = env.int("UPLOAD_DECODE_CONCURRENCY", default=1)

# The admin theme (django-unfold; assets are in the package, served by whitenoise: no CDN).
UNFOLD = {
    "SITE_TITLE": "星商城 后台",  # per page: the shop's settings row (ShopAdminSite.each_context)
    "SITE_HEADER": "星商城 后台",
    "SITE_SYMBOL": "storefront",
    "SITE_URL": "/",  # 查看站点: the shop's front page (starmall/pages.py home)
    "SHOW_HISTORY": True,
    "SHOW_VIEW_ON_SITE": False,
    "DASHBOARD_CALLBACK": "apps.backoffice.views.dashboard_callback",
    "SIDEBAR": {
        "show_search": True,
        "show_all_applications": True,
        "navigation": "apps.backoffice.navigation.sidebar",
    },  # grouped by staff task
    "STYLES": [lambda request: static("backoffice/admin.css")],  # list cells: whole Chinese words
}

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Several machines: media in S3-compatible object storage when MEDIA_S3_* are set, served from
# MEDIA_PUBLIC_URL (starmall/media_storage.py); local MEDIA_ROOT otherwise.
try:
    MEDIA_STORAGE = media_storage_from_environ(env.ENVIRON)
except MediaStorageError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
STORAGES["default"] = MEDIA_STORAGE.storages_entry
if MEDIA_STORAGE.media_url:
    MEDIA_URL = MEDIA_STORAGE.media_url
    MEDIA_SERVE = False  # the bucket (or its CDN) serves them

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # 4xx answers (sold out, expired key, throttled) are the API working, not the server
    # failing: a flash sale's 1,500 "Conflict" warnings cost a log write each.
    "loggers": {"django.request": {"level": "ERROR"}},
}


# --- Messages and the WeChat account (subscription templates, phone numbers, SMS, official account) ---
# A customer who refused a kind of subscription message (43101) is not sent that kind for this long.
SUBSCRIBE_REFUSAL_QUIET_HOURS = env.int("SUBSCRIBE_REFUSAL_QUIET_HOURS", default=24)
# SMS verification codes (POST /api/v1/sms/codes): one a minute per phone and per client address,
# at most this many a day (Shanghai date) per phone and per client address; a code lives
# SMS_CODE_TTL_SECONDS and is checked at most SMS_CODE_MAX_ATTEMPTS times.
SMS_CODES_PER_DAY = env.int("SMS_CODES_PER_DAY", default=10)
SMS_CODE_TTL_SECONDS = env.int("SMS_CODE_TTL_SECONDS", default=300)
SMS_CODE_MAX_ATTEMPTS = env.int("SMS_CODE_MAX_ATTEMPTS", default=5)
# The SMS provider of verification codes and notices (SMS_BACKEND above names the class):
# apps.accounts.sms.TencentSmsBackend (Tencent Cloud SMS, SendSms 2021-01-11, TC3-HMAC-SHA256);
# make run points it at the sandbox (wechat_sandbox/sms.py, which checks the signature).
SMS_TENCENT_ENDPOINT = env.str(
    "SMS_TENCENT_ENDPOINT", default=f"{SANDBOX_BASE}tencent-sms/"
)  # real: https://sms.tencentcloudapi.com/
SMS_TENCENT_REGION = env.str("SMS_TENCENT_REGION", default="ap-guangzhou")
SMS_TENCENT_SECRET_ID = env.str("SMS_TENCENT_SECRET_ID", default=_public("SMS_TENCENT_SECRET_ID"))
SMS_TENCENT_SECRET_KEY = env.str("SMS_TENCENT_SECRET_KEY", default=_public("SMS_TENCENT_SECRET_KEY"))
SMS_TENCENT_SDK_APP_ID = env.str("SMS_TENCENT_SDK_APP_ID", default="1400000000")
SMS_SIGN_NAME = env.str("SMS_SIGN_NAME", default="星商城")
# provider template ids: the verification code ({1} code, {2} minutes) and "order paid" ({1} order_no, {2} yuan)
SMS_TEMPLATE_CODE = env.str("SMS_TEMPLATE_CODE", default="100001")
SMS_TEMPLATE_ORDER_PAID = env.str("SMS_TEMPLATE_ORDER_PAID", default="100002")
SMS_TIMEOUT_SECONDS = env.float("SMS_TIMEOUT_SECONDS", default=5.0)
# The official account (公众号): its own appid/secret (menus, materials, mass sending), the
# server's token, and the EncodingAESKey (43 characters; empty = plaintext mode only).
WECHAT_OFFICIAL_APPID = env.str("WECHAT_OFFICIAL_APPID", default="wx5e2f7a9c1b3d4e60")
WECHAT_OFFICIAL_SECRET = env.str("WECHAT_OFFICIAL_SECRET", default=_public("WECHAT_OFFICIAL_SECRET"))
WECHAT_OFFICIAL_TOKEN = env.str("WECHAT_OFFICIAL_TOKEN", default=_public("WECHAT_OFFICIAL_TOKEN"))
WECHAT_OFFICIAL_AES_KEY = env.str("WECHAT_OFFICIAL_AES_KEY", default="")
# The server's message mode, as chosen in 公众平台 (消息加解密方式): plaintext (only plaintext
# messages), compatible (both) or safe (only encrypted ones; plaintext is refused 403).
WECHAT_OFFICIAL_MODE = env.str("WECHAT_OFFICIAL_MODE", default="safe" if WECHAT_OFFICIAL_AES_KEY else "plaintext")
WECHAT_OFFICIAL_API_BASE = env.str("WECHAT_OFFICIAL_API_BASE", default=SANDBOX_BASE)
# Followers per mass-send batch (WeChat's message/mass/send takes up to 10,000 openids).
OFFICIAL_MASS_BATCH_SIZE = env.int("OFFICIAL_MASS_BATCH_SIZE", default=10000)


def _check() -> None:
    """Refuse to start with configuration that would lose orders or money."""
    if ORDER_DRAFT_TTL_SECONDS <= 0:
        raise ImproperlyConfigured("ORDER_DRAFT_TTL_SECONDS must be a positive number of seconds")
    if RECHARGE_PAY_MINUTES <= 0:
        raise ImproperlyConfigured("RECHARGE_PAY_MINUTES must be a positive number of minutes")
    if ORDER_PAY_TIMEOUT_MINUTES <= 0:
        raise ImproperlyConfigured("ORDER_PAY_TIMEOUT_MINUTES must be a positive number of minutes")
    if AUTH_TOKEN_TTL_SECONDS <= 0:
        raise ImproperlyConfigured("AUTH_TOKEN_TTL_SECONDS must be a positive number of seconds")
    if WECHAT_TIMEOUT_SECONDS <= 0:
        raise ImproperlyConfigured("WECHAT_TIMEOUT_SECONDS must be positive (wechatpy has no timeout by default)")
    if REFUND_AUTO_APPROVE_HOURS < 0:
        raise ImproperlyConfigured("REFUND_AUTO_APPROVE_HOURS must be 0 (off) or a number of hours")
    if POINTS_FREEZE_DAYS < 0 or BOOKING_MIN_NOTICE_MINUTES < 0:
        raise ImproperlyConfigured("POINTS_FREEZE_DAYS and BOOKING_MIN_NOTICE_MINUTES must be >= 0")
    if CHAT_MESSAGES_PER_MINUTE < 1 or CHAT_NOTICE_QUIET_MINUTES < 1:
        raise ImproperlyConfigured("CHAT_MESSAGES_PER_MINUTE and CHAT_NOTICE_QUIET_MINUTES must be at least 1")
    if any(h < 1 for h in REMINDER_HOURS) or RESCHEDULE_MIN_NOTICE_HOURS < 0:
        raise ImproperlyConfigured(
            "REMINDER_HOURS must be whole hours >= 1 (e.g. 24,1); RESCHEDULE_MIN_NOTICE_HOURS >= 0"
        )
    if MAX_UNPAID_ORDERS < 1:
        raise ImproperlyConfigured("MAX_UNPAID_ORDERS must be at least 1")
    if POINT_VALUE_FEN < 1:
        raise ImproperlyConfigured("POINT_VALUE_FEN must be >= 1 fen")
    if API_MAX_BODY_BYTES <= 0 or PAY_STATUS_QUERY_INTERVAL_SECONDS < 0:
        raise ImproperlyConfigured("API_MAX_BODY_BYTES must be positive, PAY_STATUS_QUERY_INTERVAL_SECONDS >= 0")
    if INVALID_NOTIFICATION_SAMPLES < 0 or INVALID_NOTIFICATION_SAMPLE_CHARS <= 0:
        raise ImproperlyConfigured("INVALID_NOTIFICATION_SAMPLES must be >= 0, INVALID_NOTIFICATION_SAMPLE_CHARS > 0")
    if len(WECHAT_PAY_API_KEY) != 32:
        raise ImproperlyConfigured("WECHAT_PAY_API_KEY must be the 32-character WeChat Pay API key")
    if ALERT_WECOM_MSGTYPE not in ("markdown", "text") or ALERT_TIMEOUT_SECONDS <= 0:
        raise ImproperlyConfigured("ALERT_WECOM_MSGTYPE must be markdown or text, ALERT_TIMEOUT_SECONDS positive")
    if not ALERT_BACKENDS:
        raise ImproperlyConfigured("ALERT_BACKENDS must name at least one backend (apps.alerts.backends.LogBackend)")
    if WECHAT_OFFICIAL_AES_KEY and len(WECHAT_OFFICIAL_AES_KEY) != 43:
        raise ImproperlyConfigured("WECHAT_OFFICIAL_AES_KEY must be the 43-character EncodingAESKey (or empty)")
    if WECHAT_OFFICIAL_MODE not in ("plaintext", "compatible", "safe"):
        raise ImproperlyConfigured("WECHAT_OFFICIAL_MODE must be plaintext, compatible or safe")
    if WECHAT_OFFICIAL_MODE != "plaintext" and not WECHAT_OFFICIAL_AES_KEY:
        raise ImproperlyConfigured(f"WECHAT_OFFICIAL_MODE {WECHAT_OFFICIAL_MODE} needs WECHAT_OFFICIAL_AES_KEY")
    if PICKUP_VERIFY_FAILURES_PER_HOUR < 1:
        raise ImproperlyConfigured("PICKUP_VERIFY_FAILURES_PER_HOUR must be at least 1")
    if SMS_CODES_PER_DAY < 1 or SMS_CODE_TTL_SECONDS < 60 or SMS_CODE_MAX_ATTEMPTS < 1:
        raise ImproperlyConfigured("SMS_CODES_PER_DAY >= 1, SMS_CODE_TTL_SECONDS >= 60, SMS_CODE_MAX_ATTEMPTS >= 1")
    for name in ("WECHAT_API_BASE", "WECHAT_PAY_API_BASE", "WECHAT_OFFICIAL_API_BASE"):
        if not globals()[name].endswith("/"):
            raise ImproperlyConfigured(f"{name} must end in '/' (wechatpy joins paths onto it)")


# --- Distribution (分销): commissions, withdrawals, WeChat Pay API v3 merchant transfers -------
# A commission becomes available this many days after its order completed (API.md).
COMMISSION_FREEZE_DAYS = env.int("COMMISSION_FREEZE_DAYS", default=7)
WITHDRAW_MIN_FEN = env.int("WITHDRAW_MIN_FEN", default=100)  # fen
# A transfer WeChat has not finished after this many hours raises an alert (apps.alerts).
TRANSFER_STUCK_HOURS = env.int("TRANSFER_STUCK_HOURS", default=24)
# WeChat Pay API v3 (WECHAT.md): the defaults are the sandbox's shipped test keys (wechat_sandbox/keys/),
# so make run works with no internet; production refuses them (starmall/public_secrets.py).
WECHAT_PAY_V3_API_BASE = env.str("WECHAT_PAY_V3_API_BASE", default=SANDBOX_BASE.rstrip("/")).rstrip("/")
WECHAT_PAY_V3_MCH_PRIVATE_KEY = env.str(
    "WECHAT_PAY_V3_MCH_PRIVATE_KEY", default=_public("WECHAT_PAY_V3_MCH_PRIVATE_KEY")
)
WECHAT_PAY_V3_MCH_SERIAL = env.str("WECHAT_PAY_V3_MCH_SERIAL", default=_public("WECHAT_PAY_V3_MCH_SERIAL"))
WECHAT_PAY_V3_KEY = env.str("WECHAT_PAY_V3_KEY", default=_public("WECHAT_PAY_V3_KEY"))
WECHAT_PAY_V3_PUBLIC_KEY = env.str("WECHAT_PAY_V3_PUBLIC_KEY", default=_public("WECHAT_PAY_V3_PUBLIC_KEY"))
WECHAT_PAY_V3_PUBLIC_KEY_ID = env.str("WECHAT_PAY_V3_PUBLIC_KEY_ID", default=_public("WECHAT_PAY_V3_PUBLIC_KEY_ID"))
# The mini-program page a promotion code opens (getwxacodeunlimit ``page``; empty: the home page).
PROMOTION_CODE_PAGE = env.str("PROMOTION_CODE_PAGE", default="")
