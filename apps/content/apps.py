from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class ContentConfig(AppConfig):
    """The storefront staff edit without a release: home page blocks, articles, favourites."""

    name = "apps.content"
    label = "content"
    verbose_name = "内容"

    def ready(self) -> None:
        """Any saved or deleted home-page block drops the cached home page
        (``apps.content.home.home_cache_clear``), whoever writes it: the admin, the demo data, a
        shell — the freight terms' pattern (``apps.shipping.apps``)."""
        from apps.content.models import Banner, HotSearch, NavItem, Notice

        for model in (Banner, NavItem, HotSearch, Notice):
            post_save.connect(_home_changed, sender=model, dispatch_uid=f"home-save-{model.__name__}")
            post_delete.connect(_home_changed, sender=model, dispatch_uid=f"home-delete-{model.__name__}")


def _home_changed(sender, **kwargs) -> None:
    from apps.content.home import home_cache_clear

    home_cache_clear()
