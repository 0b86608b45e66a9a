from django.apps import AppConfig


class StoresConfig(AppConfig):
    """Self-pickup (自提): stores, their staff, pickup verification."""

    name = "apps.stores"
    label = "stores"
    verbose_name = "门店自提"
