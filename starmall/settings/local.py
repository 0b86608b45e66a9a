"""Settings for a developer's machine and the demo shop (``make run``)."""

from starmall import public_secrets

from .base import *  # noqa: F401,F403
from .base import VAR_DIR, _check, env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
SECRET_KEY = SECRET_KEY or public_secrets.BY_SETTING["SECRET_KEY"].values[0]  # noqa: F405

# Alert mails (apps.alerts.backends.EmailBackend) land as files in var/mail/ unless EMAIL_URL
# names a real server; the robot's messages go to the sandbox (GET /sandbox/robot-messages).
if not env.str("EMAIL_URL", default=""):
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = str(VAR_DIR / "mail")
ALERT_EMAILS = env.list("ALERT_EMAILS", default=["ops@localhost"])

# SMS (verification codes, "order paid"): Tencent Cloud SMS's API, served by the sandbox
# (GET /sandbox/sms lists what was sent).
SMS_BACKEND = env.str("SMS_BACKEND", default="apps.accounts.sms.TencentSmsBackend")

_check()
