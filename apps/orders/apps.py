from django.apps import AppConfig


class OrdersConfig(AppConfig):
    verbose_name = "订单"
    name = "apps.orders"
    label = "orders"
