from django.apps import AppConfig


class CatalogConfig(AppConfig):
    verbose_name = "商品"
    name = "apps.catalog"
    label = "catalog"
