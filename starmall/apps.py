"""The project package as an app: it holds the shop's settings row (:class:`starmall.models.ShopProfile`)
and the shop's own system checks (``starmall/checks.py``)."""

from django.apps import AppConfig


class StarmallConfig(AppConfig):
    name = "starmall"
    label = "starmall"
    verbose_name = "店铺"

    def ready(self) -> None:
        from starmall import checks  # noqa: F401  (registers them)
