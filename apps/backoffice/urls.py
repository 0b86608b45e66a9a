"""The back office's own admin pages (exports, calendars), under /admin/."""

from django.urls import path


def admin_urls(site) -> list:
    """URL patterns added to ``site`` (each view wrapped by ``site.admin_view``: staff login;
    the views check their named permission)."""
    from apps.backoffice import views_calendar, views_export, views_hours

    return [
        path(
            "backoffice/export/",
            site.admin_view(lambda request: views_export.export_view(request, site)),
            name="backoffice_export",
        ),
        path(
            "backoffice/week/",
            site.admin_view(lambda request: views_calendar.week_view(request, site)),
            name="backoffice_week",
        ),
        path(
            "backoffice/week/day/",
            site.admin_view(lambda request: views_hours.day_hours_post(request, site)),
            name="backoffice_week_day",
        ),
        path(
            "backoffice/almanac/",
            site.admin_view(lambda request: views_calendar.almanac_month(request, site)),
            name="backoffice_almanac",
        ),
    ]
