"""Admin: invalid notifications per day (counts; the kept samples are under Notifications)."""

from django.contrib import admin

from apps.payments.models import InvalidNotificationDay
from starmall.admin import ReadOnlyModelAdmin


@admin.register(InvalidNotificationDay)
class InvalidNotificationDayAdmin(ReadOnlyModelAdmin):
    list_display = ["day", "kind", "count"]
    list_filter = ["kind"]
    date_hierarchy = "day"
