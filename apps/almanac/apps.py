from django.apps import AppConfig


class AlmanacConfig(AppConfig):
    verbose_name = "黄历"
    name = "apps.almanac"
    label = "almanac"
