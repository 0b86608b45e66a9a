"""Alerts (apps.alerts) and Django's mail, which sends them."""

import environ

from .wechat import SANDBOX_BASE

env = environ.Env()

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
