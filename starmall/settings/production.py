"""Settings for a real shop: every secret comes from the environment; start-up refuses anything
that would talk to a fake WeChat, lose refunds, keep a secret this repository makes public
(``starmall/public_secrets.py``), or fail ``manage.py check --deploy``.

Imports nothing of the WeChat sandbox (a dev package). Behind nginx (docs/DEPLOY.md): TLS ends
at nginx, which sets ``X-Forwarded-Proto``; Django redirects plain http and sends HSTS.
"""

from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from django.core.exceptions import ImproperlyConfigured

from starmall import public_secrets

from .base import *  # noqa: F401,F403
from .base import _check, env

DEBUG = False
DEMO_SHOP_ALLOWED = False  # runshop (make run) refuses demo data and the demo staff login
MEDIA_SERVE = env.bool("MEDIA_SERVE", default=False)  # nginx serves MEDIA_URL (docs/DEPLOY.md)

_required = [
    "DJANGO_SECRET_KEY",
    "DATABASE_URL",
    "REDIS_URL",
    "SITE_URL",
    "WECHAT_APPID",
    "WECHAT_APP_SECRET",
    "WECHAT_MCH_ID",
    "WECHAT_PAY_API_KEY",
    "WECHAT_API_BASE",
    "WECHAT_PAY_API_BASE",
    "WECHAT_MCH_CERT",
    "WECHAT_MCH_KEY",
]
_missing = [name for name in _required if not env.str(name, default="")]
if _missing:
    raise ImproperlyConfigured("production needs these environment variables: " + ", ".join(_missing))

# WeChat's own hosts only, over https (WECHAT.md): api.mch.weixin.qq.com and its backup
# api2.mch.weixin.qq.com for Pay, api.weixin.qq.com for the mini-program.
# The official account's APIs and Tencent Cloud SMS: their real hosts unless set (base's
# defaults are the sandbox's).
WECHAT_OFFICIAL_API_BASE = env.str("WECHAT_OFFICIAL_API_BASE", default="https://api.weixin.qq.com/")
SMS_TENCENT_ENDPOINT = env.str("SMS_TENCENT_ENDPOINT", default="https://sms.tencentcloudapi.com/")
WECHAT_HOSTS = {
    "WECHAT_PAY_API_BASE": {"api.mch.weixin.qq.com", "api2.mch.weixin.qq.com"},
    "WECHAT_API_BASE": {"api.weixin.qq.com"},
    "WECHAT_OFFICIAL_API_BASE": {"api.weixin.qq.com"},
}
for _name, _hosts in WECHAT_HOSTS.items():
    _url = urlsplit(globals()[_name])
    if (
        _url.scheme != "https"
        or _url.hostname not in _hosts
        or _url.port not in (None, 443)
        or _url.username
        or _url.path != "/"
        or _url.query
        or _url.fragment
    ):  # a path: e.g. /sandboxnew/, Pay's simulation
        raise ImproperlyConfigured(
            f"{_name} must be https://{sorted(_hosts)[0]}/ (https on WeChat's hosts: {', '.join(sorted(_hosts))}), "
            f"not {globals()[_name]!r}"
        )

# WeChat Pay API v3 (merchant transfers for withdrawals): WeChat's host unless set, never the
# sandbox's (base's default). Its keys are the merchant's own (docs/DEPLOY.md); the sandbox's
# shipped test keys only sign requests WeChat refuses.
WECHAT_PAY_V3_API_BASE = env.str("WECHAT_PAY_V3_API_BASE", default="https://api.mch.weixin.qq.com").rstrip("/")
_v3 = urlsplit(WECHAT_PAY_V3_API_BASE)
if (
    _v3.scheme != "https"
    or _v3.hostname not in WECHAT_HOSTS["WECHAT_PAY_API_BASE"]
    or _v3.path
    or _v3.port not in (None, 443)
):
    raise ImproperlyConfigured(
        f"WECHAT_PAY_V3_API_BASE must be https://api.mch.weixin.qq.com (WeChat Pay's host), not {WECHAT_PAY_V3_API_BASE!r}"
    )

# Alerts must reach someone (apps.alerts): an enterprise-WeChat group robot and/or mail. The
# robot's webhook only on WeCom's host over https (the sandbox default of base is not kept);
# ALERT_BACKENDS set by hand (e.g. the LogBackend alone) is taken as a deliberate choice.
ALERT_WECOM_WEBHOOK_URL = env.str("ALERT_WECOM_WEBHOOK_URL", default="")
ALERT_EMAILS = env.list("ALERT_EMAILS", default=[])
_WECOM = "apps.alerts.backends.WeComRobotBackend"
_EMAIL = "apps.alerts.backends.EmailBackend"
if not env.str("ALERT_BACKENDS", default=""):
    if not (ALERT_WECOM_WEBHOOK_URL or ALERT_EMAILS):
        raise ImproperlyConfigured(
            "production sends alerts somewhere: set ALERT_WECOM_WEBHOOK_URL (an enterprise-WeChat group robot) "
            "and/or ALERT_EMAILS (with EMAIL_URL), or ALERT_BACKENDS=apps.alerts.backends.LogBackend to only log them"
        )
    ALERT_BACKENDS = (
        ["apps.alerts.backends.LogBackend"] + [_WECOM] * bool(ALERT_WECOM_WEBHOOK_URL) + [_EMAIL] * bool(ALERT_EMAILS)
    )
if _WECOM in ALERT_BACKENDS:  # noqa: F405
    _url = urlsplit(ALERT_WECOM_WEBHOOK_URL)
    _key = dict(parse_qsl(_url.query)).get("key", "")
    if (
        _url.scheme != "https"
        or _url.hostname != "qyapi.weixin.qq.com"
        or _url.port not in (None, 443)
        or _url.username
        or _url.path != "/cgi-bin/webhook/send"
        or not _key
        or _url.fragment
    ):
        raise ImproperlyConfigured(
            "ALERT_WECOM_WEBHOOK_URL must be https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=<the robot's key> "
            f"(the group robot's webhook on WeCom's host), not {_url._replace(query='key=***').geturl()!r}"
        )
if _EMAIL in ALERT_BACKENDS and not ALERT_EMAILS:  # noqa: F405
    raise ImproperlyConfigured("ALERT_EMAILS must list who gets alert mails when ALERT_BACKENDS has the EmailBackend")
if _EMAIL in ALERT_BACKENDS and not env.str("EMAIL_URL", default=""):  # noqa: F405
    raise ImproperlyConfigured(
        "alert mails need a mail server: set EMAIL_URL (e.g. smtp+tls://user:password@smtp.example.com:587)"
    )
# Error reports (tracebacks in mails or logs) never show the robot's key: Django hides only
# settings whose names say KEY, TOKEN, SECRET, ...; this one's name says URL.
DEFAULT_EXCEPTION_REPORTER_FILTER = "starmall.reporting.SettingsReporterFilter"

# The merchant API certificate is needed for every refund, the v3 keys for every transfer: find
# a wrong path at start-up, not at the first refund.
for _name in ("WECHAT_MCH_CERT", "WECHAT_MCH_KEY", "WECHAT_PAY_V3_MCH_PRIVATE_KEY", "WECHAT_PAY_V3_PUBLIC_KEY"):
    _path = Path(globals()[_name])
    if not _path.is_file():
        raise ImproperlyConfigured(f"{_name} must be the path of a readable PEM file; {_path} does not exist")
    try:
        with _path.open("rb"):
            pass
    except OSError as _exc:
        raise ImproperlyConfigured(f"{_name}: {_path} cannot be read ({_exc.strerror})") from None

_site = urlsplit(SITE_URL)  # noqa: F405
if _site.scheme != "https" or not _site.hostname:
    raise ImproperlyConfigured(
        f"SITE_URL must be the shop's public https address (WeChat posts notifications there), not {SITE_URL!r}"  # noqa: F405
    )
# The site's own host unless DJANGO_ALLOWED_HOSTS lists them (then exactly those).
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=[_site.hostname])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[f"https://{_site.netloc}"])

# HTTPS everywhere: nginx terminates TLS and says so in X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # the local health probe speaks plain http to gunicorn
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True

# No secret at a value this repository makes public (starmall/public_secrets.py: base's defaults,
# the sandbox's keys wherever a copy of them lies): anyone could sign what the shop trusts.
_public = public_secrets.refusals(globals())
if _public:
    raise ImproperlyConfigured(public_secrets.refusal_line(_public))

_check()
