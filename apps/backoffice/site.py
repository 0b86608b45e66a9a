"""The shop's admin site: django-unfold's theme, yuan for every ``*_fen`` field, the dashboard.

Every ModelAdmin (and its inlines) registered by any app is given, at registration, the theme's
base class (``unfold.admin.ModelAdmin`` / inlines) and :class:`starmall.admin_money.YuanAdminMixin`
(ModelAdmins also :class:`apps.backoffice.dates.DateFilterBoundsMixin`),
so the apps keep plain ``admin.ModelAdmin`` code (and their permission-gated, service-backed
actions) and still look and behave the same.
"""

from __future__ import annotations

from django.contrib import admin
from unfold import admin as unfold_admin
from unfold.sites import UnfoldAdminSite

from apps.backoffice.dates import DateFilterBoundsMixin
from starmall.admin_money import YuanAdminMixin

_THEMED: dict[type, type] = {}


def _inline_base(inline: type) -> type:
    if issubclass(inline, unfold_admin.StackedInline | unfold_admin.TabularInline):
        return inline
    if issubclass(inline, admin.StackedInline):
        return unfold_admin.StackedInline
    return unfold_admin.TabularInline


@admin.display(description="编号", ordering="pk")
def row_number(obj) -> int:
    """The primary key under a Chinese header ("编号", not Django's "ID")."""
    return obj.pk


class ChineseIdMixin:
    """A list column named ``"id"`` is shown as 编号 (:func:`row_number`), still the row's link."""

    def get_list_display(self, request):
        return [row_number if name in ("id", "pk") else name for name in super().get_list_display(request)]


def themed(admin_class: type, theme_base: type) -> type:
    """``admin_class`` with the yuan mixin in front and the theme's base behind (cached); a
    ModelAdmin also gets :class:`apps.backoffice.dates.DateFilterBoundsMixin` (date filters in
    range)."""
    if admin_class in _THEMED:
        return _THEMED[admin_class]
    front = (
        (YuanAdminMixin, DateFilterBoundsMixin, ChineseIdMixin)
        if issubclass(admin_class, admin.ModelAdmin)
        else (YuanAdminMixin,)
    )
    bases = (*front, admin_class) if issubclass(admin_class, theme_base) else (*front, admin_class, theme_base)
    attrs = {"__module__": admin_class.__module__, "__doc__": admin_class.__doc__}
    if getattr(admin_class, "inlines", None):
        attrs["inlines"] = [themed(inline, _inline_base(inline)) for inline in admin_class.inlines]
    new = type(admin_class.__name__, bases, attrs)
    _THEMED[admin_class] = new
    return new


class ShopAdminSite(UnfoldAdminSite):
    """``admin.site``: Chinese titles, the dashboard as index (``apps.backoffice.views``)."""

    site_header = "星商城 后台"
    site_title = "星商城"
    index_title = "工作台"

    def each_context(self, request):
        """The theme's context with the shop's name and logo from its settings row
        (:mod:`starmall.shop`: one query)."""
        from starmall import shop

        context = super().each_context(request)
        name, logo = shop.shop_profile()
        context.update(site_title=f"{name} 后台", site_header=f"{name} 后台")
        if logo:
            context["site_logo"] = logo
        return context

    def get_app_list(self, request, app_label=None):
        """Django's list of apps and models this user may see, built once per request: the
        page's context and the sidebar (``apps.backoffice.navigation``) both read it, and each
        build asks every registered admin for its permissions."""
        if app_label is not None:
            return super().get_app_list(request, app_label)
        built = getattr(request, "_shop_app_list", None)
        if built is None:
            built = request._shop_app_list = super().get_app_list(request)
        return built

    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = themed(admin_class or admin.ModelAdmin, unfold_admin.ModelAdmin)
        return super().register(model_or_iterable, admin_class, **options)

    def extra_urls(self):
        from apps.backoffice.urls import admin_urls

        return admin_urls(self)
