from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class ShippingConfig(AppConfig):
    name = "apps.shipping"
    label = "shipping"
    verbose_name = "运费"

    def ready(self) -> None:
        """Any saved or deleted template or rule drops the cached freight terms
        (``apps.shipping.selectors.terms_cache_clear``), whoever writes it: the admin and its
        inlines, the demo data, a shell."""
        from apps.shipping.models import FreeShippingRule, FreightRegionRule, FreightTemplate

        for model in (FreightTemplate, FreightRegionRule, FreeShippingRule):
            post_save.connect(_terms_changed, sender=model, dispatch_uid=f"freight-terms-save-{model.__name__}")
            post_delete.connect(_terms_changed, sender=model, dispatch_uid=f"freight-terms-delete-{model.__name__}")


def _terms_changed(sender, **kwargs) -> None:
    from apps.shipping.selectors import terms_cache_clear

    terms_cache_clear()
