"""The back office: the admin site (theme, yuan, dashboard), roles, calendars, exports."""

from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class BackofficeConfig(AppConfig):
    default = True
    name = "apps.backoffice"
    label = "backoffice"
    verbose_name = "后台"


class ShopAdminConfig(admin_apps.AdminConfig):
    """``django.contrib.admin`` with :class:`apps.backoffice.site.ShopAdminSite` as ``admin.site``,
    so every ``@admin.register`` in the apps lands on the themed, yuan-aware site."""

    default = False
    default_site = "apps.backoffice.site.ShopAdminSite"
