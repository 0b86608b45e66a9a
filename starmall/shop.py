"""The shop's name and logo as one setting: the :class:`starmall.models.ShopProfile` row staff
edit in *系统 › 店铺设置*, falling back to ``settings.SHOP_NAME`` (env ``SHOP_NAME``, default 星商城).

Every layer may import this module (it imports no app): the admin title, SMS texts, WeChat Pay's
``body`` and alert messages all read :func:`shop_name`, so renaming the shop is one save."""

from __future__ import annotations

from django.conf import settings
from django.db import DatabaseError


def _profile():
    from starmall.models import ShopProfile

    try:
        return ShopProfile.objects.filter(pk=1).first()
    except DatabaseError:  # before migrate (or a database that is away): the setting
        return None


def shop_name() -> str:
    """The shop's name: the settings row's, else ``SHOP_NAME`` ("星商城")."""
    profile = _profile()
    return (profile.name.strip() if profile and profile.name.strip() else "") or settings.SHOP_NAME


def shop_profile() -> tuple[str, str | None]:
    """``(name, logo URL or None)`` with one query (the admin's every page)."""
    profile = _profile()
    name = (profile.name.strip() if profile and profile.name.strip() else "") or settings.SHOP_NAME
    logo = None
    if profile and profile.logo:
        try:
            logo = profile.logo.url
        except ValueError:
            logo = None
    return name, logo


def shop_logo_url() -> str | None:
    """The logo's URL in the shop's storage, or None without one."""
    profile = _profile()
    if profile and profile.logo:
        try:
            return profile.logo.url
        except ValueError:
            return None
    return None


def admin_title(request=None) -> str:
    """The back office's title: "<shop name> 后台" (django-unfold's SITE_TITLE / SITE_HEADER)."""
    return f"{shop_name()} 后台"


def admin_logo(request=None) -> str | None:
    """django-unfold's SITE_LOGO: the shop's logo, or None (then the symbol is shown)."""
    return shop_logo_url()


def alert_tag() -> str:
    """The prefix of alert messages: "【星商城 告警】"."""
    return f"【{shop_name()} 告警】"
