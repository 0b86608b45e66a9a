"""The project package as an app: it holds the shop's settings row (:class:`starmall.models.ShopProfile`)."""

from django.apps import AppConfig


class StarmallConfig(AppConfig):
    name = "starmall"
    label = "starmall"
    verbose_name = "店铺"
