from django.contrib import admin

from apps.appointments.models import Booking, Slot
from starmall.admin import ReadOnlyModelAdmin


class BookingInline(admin.TabularInline):
    model = Booking
    extra = 0
    readonly_fields = ["order_no", "customer", "created_at"]
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False  # bookings are made by orders only


@admin.register(Slot)
class SlotAdmin(admin.ModelAdmin):
    list_display = ["id", "teacher", "start", "end", "capacity", "booked", "is_open"]
    list_filter = ["teacher", "is_open"]
    date_hierarchy = "start"
    readonly_fields = ["booked"]
    list_editable = ["is_open"]
    inlines = [BookingInline]


@admin.register(Booking)
class BookingAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "slot", "order_no", "customer", "created_at"]
    search_fields = ["order_no", "customer__openid"]
    list_filter = ["slot__teacher"]
