"""Settings shared by every environment: Django itself, the database, the API, files and time,
then each concern's module (``queues``, ``beat``, ``shop``, ``wechat``, ``alerts``).

Every value is read from the environment through django-environ; defaults give a newcomer a
working shop (SQLite under ``var/``, the embedded Redis, the local WeChat sandbox).
:func:`_check` stops start-up on bad configuration (local, production and test call it).
"""

from pathlib import Path
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured
from django.templatetags.static import static

from starmall import embedded_redis
from starmall.media_storage import MediaStorageError
from starmall.media_storage import from_environ as media_storage_from_environ
from starmall.proxies import from_environ as trusted_proxies_from_environ

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
    "apps.members",  # levels, growth, paid membership (SVIP), member prices; above catalog, below orders
    "apps.appointments",
    "apps.marketing",
    "apps.shipping",
    "apps.content",  # home page blocks, articles, favourites
    "apps.orders",
    "apps.payments",
    "apps.stores",  # self-pickup stores, their staff, pickup verification
    "apps.points_mall",  # 积分商城: above orders (an exchange makes an order), beside payments
    "apps.crm",  # 顾客运营: tag rules evaluated over orders, coupons issued to a tag; above orders
    "apps.printing",  # receipt printers, electronic waybills, print jobs: above orders, beside payments
    "apps.almanac",
    "apps.reviews",
    "apps.backoffice",
    "apps.chat",
    "apps.distribution",  # above payments and stores, below chat/reviews/backoffice (referrals, commissions, withdrawals)
    "apps.wechat_official",  # the official account (公众号): server, replies, menus, materials, mass sends
    "apps.backoffice.apps.AxesConfig",  # admin login lockout (django-axes, named in Chinese); last, as its docs ask
]

MIDDLEWARE = [
    "starmall.api.middleware.ApiRefusalJsonMiddleware",  # Django's own 400/403 under /api/ as JSON
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
# A streaming standby for the exports' and the dashboard figures' reads (starmall/db_replica.py,
# docs/DEPLOY.md); unset, they read the primary. Never migrated, never written.
if env.str("DATABASE_REPLICA_URL", default=""):
    DATABASES["replica"] = {
        **env.db_url("DATABASE_REPLICA_URL"),
        "CONN_MAX_AGE": DATABASES["default"].get("CONN_MAX_AGE", 0),
        "CONN_HEALTH_CHECKS": True,
        "ATOMIC_REQUESTS": False,
        "DISABLE_SERVER_SIDE_CURSORS": DATABASES["default"].get("DISABLE_SERVER_SIDE_CURSORS", False),
        "TEST": {"MIRROR": "default"},
    }
REPORTING_DATABASE = "replica" if "replica" in DATABASES else "default"
DATABASE_ROUTERS = ["starmall.db_replica.PrimaryWritesRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


# Each concern in its own module, in the order they were read (none overrides another).
from .alerts import *  # noqa: E402,F403
from .beat import *  # noqa: E402,F403
from .queues import *  # noqa: E402,F403
from .shop import *  # noqa: E402,F403
from .wechat import *  # noqa: E402,F403

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
        "GroupStatusEnum": "apps.marketing.models_group_bargain.Group.Status",  # a 拼团 group: forming / done / failed
        "PointsMallKindEnum": "apps.points_mall.models.Item.Kind",  # a points-mall item: goods / coupon
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
    # the <link rel=icon> of every admin page (also served at /favicon.ico: starmall.pages.favicon)
    "SITE_FAVICONS": [
        {"rel": "icon", "type": "image/x-icon", "href": lambda request: static("backoffice/favicon.ico")}
    ],
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
    if WECHAT_PAY_API not in ("v2", "v3"):
        raise ImproperlyConfigured(f"WECHAT_PAY_API must be v2 or v3, not {WECHAT_PAY_API!r}")
    if WECHAT_TIMEOUT_SECONDS <= 0:
        raise ImproperlyConfigured("WECHAT_TIMEOUT_SECONDS must be positive (wechatpy has no timeout by default)")
    if SERVICE_REFUND_LIMIT_FEN < 0 or not 0 <= OPS_PRICE_CHANGE_PERCENT <= 100:
        raise ImproperlyConfigured("SERVICE_REFUND_LIMIT_FEN must be >= 0 fen, OPS_PRICE_CHANGE_PERCENT 0..100")
    if REFUND_AUTO_APPROVE_HOURS < 0:
        raise ImproperlyConfigured("REFUND_AUTO_APPROVE_HOURS must be 0 (off) or a number of hours")
    if POINTS_FREEZE_DAYS < 0 or BOOKING_MIN_NOTICE_MINUTES < 0:
        raise ImproperlyConfigured("POINTS_FREEZE_DAYS and BOOKING_MIN_NOTICE_MINUTES must be >= 0")
    if CHAT_MESSAGES_PER_MINUTE < 1 or CHAT_NOTICE_QUIET_MINUTES < 1:
        raise ImproperlyConfigured("CHAT_MESSAGES_PER_MINUTE and CHAT_NOTICE_QUIET_MINUTES must be at least 1")
    if RESCHEDULE_MAX < 0 or CANCEL_FULL_REFUND_HOURS < 0 or not 0 <= LATE_CANCEL_REFUND_PERCENT <= 100:
        raise ImproperlyConfigured(
            "RESCHEDULE_MAX and CANCEL_FULL_REFUND_HOURS must be >= 0, LATE_CANCEL_REFUND_PERCENT 0..100"
        )
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
