from django.apps import AppConfig


class CrmConfig(AppConfig):
    """顾客运营: customer tags' rules evaluated over orders, coupons issued to a tag. Above
    orders and marketing/members (which sit on one row and may not import each other)."""

    name = "apps.crm"
    label = "crm"
    verbose_name = "顾客运营"
