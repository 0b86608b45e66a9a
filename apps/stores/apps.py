from django.apps import AppConfig


class StoresConfig(AppConfig):
    """Self-pickup (自提): stores, their staff, pickup verification."""

    name = "apps.stores"
    label = "stores"
    verbose_name = "门店自提"

    def ready(self) -> None:
        """Give orders (a lower layer) the way to look a store up at confirm."""
        from apps.orders.pickup import store_resolver_register
        from apps.stores.selectors import store_snapshot

        store_resolver_register(store_snapshot)
