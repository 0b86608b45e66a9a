"""What Django's error reports (DEBUG pages, mailed or logged tracebacks) may show of settings."""

import re

from django.utils.regex_helper import _lazy_re_compile
from django.views.debug import SafeExceptionReporterFilter


class SettingsReporterFilter(SafeExceptionReporterFilter):
    """Django's list of secret-looking setting names, plus WEBHOOK: ``ALERT_WECOM_WEBHOOK_URL``
    carries the group robot's key (whoever has it can post in the group), and its name says URL."""

    hidden_settings = _lazy_re_compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|WEBHOOK", flags=re.IGNORECASE
    )
