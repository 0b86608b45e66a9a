"""Dates and times as Chinese shop software writes them: "2026-12-01 20:00" (Shanghai time,
``TIME_ZONE``), shorter than Django's "2026年12月1日 20:00" so list columns stay on one line.
Everything not set here comes from Django's zh_Hans formats."""

DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
