"""Settings for a real shop: every secret must come from the environment."""

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F401,F403
from .base import SANDBOX_BASE, _check, env

DEBUG = False
_required = [
    "DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "SITE_URL",
    "WECHAT_APPID", "WECHAT_APP_SECRET", "WECHAT_MCH_ID", "WECHAT_PAY_API_KEY",
    "WECHAT_API_BASE", "WECHAT_PAY_API_BASE", "WECHAT_MCH_CERT", "WECHAT_MCH_KEY",
]
_missing = [name for name in _required if not env.str(name, default="")]
if _missing:
    raise ImproperlyConfigured("production needs these environment variables: " + ", ".join(_missing))
if SANDBOX_BASE in (WECHAT_API_BASE, WECHAT_PAY_API_BASE):  # noqa: F405
    raise ImproperlyConfigured("production must not talk to the local WeChat sandbox")

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True

_check()
