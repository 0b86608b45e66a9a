"""*系统 › 店铺设置*: the shop's name and logo (one row, :mod:`starmall.shop`), used by the admin
title, customer messages, WeChat Pay's ``body`` and alerts. Held by ``starmall.change_shopprofile``
(the owner: superusers; grant it by hand to anyone else)."""

from __future__ import annotations

from django.contrib import admin

from starmall.models import ShopProfile


@admin.register(ShopProfile)
class ShopProfileAdmin(admin.ModelAdmin):
    """One row (pk 1): added once, never deleted."""

    fields = ["name", "logo", "logo_preview", "updated_at"]
    readonly_fields = ["logo_preview", "updated_at"]

    @admin.display(description="当前标志")
    def logo_preview(self, profile: ShopProfile):
        from django.utils.html import format_html

        if not profile.logo:
            return "（未上传：显示默认图标）"
        return format_html('<img src="{}" alt="店铺标志" style="height:48px">', profile.logo.url)

    list_display = ["__str__", "logo_preview", "updated_at"]

    def has_add_permission(self, request):
        return super().has_add_permission(request) and not ShopProfile.objects.exists()

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        obj.pk = 1  # the one row that starmall.shop reads
        super().save_model(request, obj, form, change)
