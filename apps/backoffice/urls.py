"""The back office's own admin pages (dashboard parts, calendars, exports), under /admin/."""


def admin_urls(site) -> list:
    """URL patterns added to ``site`` (each view wrapped by ``site.admin_view``: staff login)."""
    return []
