from django.apps import AppConfig


class MarketingConfig(AppConfig):
    name = "apps.marketing"
    label = "marketing"
    verbose_name = "营销"

    def ready(self):
        """New-customer coupons are given at the first login (``apps.marketing.gifts``)."""
        from apps.accounts import login_hooks
        from apps.marketing import gifts

        if gifts.new_customer_gifts_give not in login_hooks.LOGIN_HOOKS:
            login_hooks.LOGIN_HOOKS.append(gifts.new_customer_gifts_give)
