from django.apps import AppConfig


class AlmanacConfig(AppConfig):
    name = "apps.almanac"
    label = "almanac"
