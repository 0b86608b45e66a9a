from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    verbose_name = "支付与退款"
    name = "apps.payments"
    label = "payments"
