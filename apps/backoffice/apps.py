"""The back office: the admin site (theme, yuan, dashboard), roles, calendars, exports."""

from axes.apps import AppConfig as AxesAppConfig
from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class BackofficeConfig(AppConfig):
    default = True
    name = "apps.backoffice"
    label = "backoffice"
    verbose_name = "后台"

    def ready(self):
        from django.db.models.signals import post_migrate

        from apps.backoffice.roles import permission_names_sync

        # After django.contrib.auth's create_permissions (auth is installed, so connected, first).
        post_migrate.connect(permission_names_sync, dispatch_uid="backoffice_permission_names")


class ShopAdminConfig(admin_apps.AdminConfig):
    """``django.contrib.admin`` with :class:`apps.backoffice.site.ShopAdminSite` as ``admin.site``,
    so every ``@admin.register`` in the apps lands on the themed, yuan-aware site."""

    default = False
    default_site = "apps.backoffice.site.ShopAdminSite"


class AxesConfig(AxesAppConfig):
    """django-axes (admin login lockout) under a Chinese name in the admin's sidebar."""

    default = False
    verbose_name = "登录保护"
