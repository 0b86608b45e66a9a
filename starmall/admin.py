"""Admin building blocks shared by the apps."""

from django.contrib import admin


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """For append-only or machine-written rows (payments, notifications, almanac days):
    staff can look and run actions, never add, edit or delete."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
