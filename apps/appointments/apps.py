from django.apps import AppConfig


class AppointmentsConfig(AppConfig):
    verbose_name = "预约"
    name = "apps.appointments"
    label = "appointments"
