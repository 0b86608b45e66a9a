from django.apps import AppConfig


class AlertsConfig(AppConfig):
    verbose_name = "告警"
    name = "apps.alerts"
    label = "alerts"
