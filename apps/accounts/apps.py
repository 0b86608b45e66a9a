from django.apps import AppConfig


class AccountsConfig(AppConfig):
    verbose_name = "顾客与账户"
    name = "apps.accounts"
    label = "accounts"
