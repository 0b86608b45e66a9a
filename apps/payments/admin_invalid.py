"""Admin: invalid notifications per day (counts; the kept samples are under Notifications), and
the payment results the notify gate queued that the worker has not applied yet."""

from django.contrib import admin

from apps.payments.models import InvalidNotificationDay, QueuedNotification
from starmall.admin import ReadOnlyModelAdmin


@admin.register(InvalidNotificationDay)
class InvalidNotificationDayAdmin(ReadOnlyModelAdmin):
    list_display = ["day", "kind", "count"]
    list_filter = ["kind"]
    date_hierarchy = "day"


@admin.register(QueuedNotification)
class QueuedNotificationAdmin(ReadOnlyModelAdmin):
    """Normally empty: a row lives milliseconds, until the worker applies it (then it is a
    Notification). Rows older than a minute mean the worker or beat is not running."""

    list_display = ["received_at", "out_trade_no", "transaction_id"]
    search_fields = ["out_trade_no", "transaction_id"]
