from django.apps import AppConfig


class MarketingConfig(AppConfig):
    name = "apps.marketing"
    label = "marketing"
    verbose_name = "营销"
