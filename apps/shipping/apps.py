from django.apps import AppConfig


class ShippingConfig(AppConfig):
    name = "apps.shipping"
    label = "shipping"
    verbose_name = "运费"
