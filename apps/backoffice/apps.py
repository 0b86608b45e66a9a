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
        # The dashboard's daily figures hear of what changes a closed day through the lower apps'
        # registries (apps import only downward): the paying transaction's outbox and the refund.
        from apps.backoffice import day_figures
        from apps.orders import followups
        from apps.payments import hooks

        followups.HANDLERS[followups.FollowUp.Kind.DAY_FIGURES] = day_figures.followup_day_figures
        if day_figures.paid_kinds not in followups.PAID_KINDS:
            followups.PAID_KINDS.append(day_figures.paid_kinds)
        if day_figures.refund_succeeded_hook not in hooks.REFUND_SUCCEEDED:
            hooks.REFUND_SUCCEEDED.append(day_figures.refund_succeeded_hook)


class ShopAdminConfig(admin_apps.AdminConfig):
    """``django.contrib.admin`` with :class:`apps.backoffice.site.ShopAdminSite` as ``admin.site``,
    so every ``@admin.register`` in the apps lands on the themed, yuan-aware site."""

    default = False
    default_site = "apps.backoffice.site.ShopAdminSite"


class AxesConfig(AxesAppConfig):
    """django-axes (admin login lockout) under a Chinese name in the admin's sidebar."""

    default = False
    verbose_name = "登录保护"
