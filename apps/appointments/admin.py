"""Back office for slots: changed only by holders of ``appointments.manage_slot``, through
``services.slot_update`` (capacity never below bookings, a booked slot's time never moves);
times shown in Shanghai time."""

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.utils import timezone

from apps.appointments import services
from apps.appointments.models import Booking, Slot
from starmall.admin import ReadOnlyModelAdmin
from starmall.errors import ShopError

MANAGE = "appointments.manage_slot"
TIME_FIELDS = ("teacher", "start", "end")  # fixed once someone booked the slot


def _local(value) -> str:
    return f"{timezone.localtime(value):%Y-%m-%d %H:%M}" if value else "—"


class BookingInline(admin.TabularInline):
    model = Booking
    extra = 0
    readonly_fields = ["order_no", "customer", "created_at"]
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False  # bookings are made by orders only

    def has_change_permission(self, request, obj=None):
        return False


class SlotForm(forms.ModelForm):
    """Capacity below the bookings and a booked slot's new time are form errors, not a 500."""

    class Meta:
        model = Slot
        fields = ["teacher", "start", "end", "capacity", "is_open"]

    def clean(self):
        data = super().clean()
        booked = self.instance.booked if self.instance.pk else 0
        capacity = data.get("capacity")
        if capacity is not None and capacity < booked:
            self.add_error("capacity", f"容量不能小于已预约人数（{booked}）")
        if booked and any(name in self.changed_data for name in TIME_FIELDS):
            raise forms.ValidationError("该时段已有预约，不能修改老师或时间")
        start, end = data.get("start", self.instance.start), data.get("end", self.instance.end)
        if start and end and end <= start:
            self.add_error("end", "结束时间必须晚于开始时间")
        return data


@admin.register(Slot)
class SlotAdmin(admin.ModelAdmin):
    form = SlotForm
    list_display = ["id", "teacher", "start_local", "end_local", "capacity", "booked", "is_open"]
    list_filter = ["teacher", "is_open"]
    date_hierarchy = "start"
    list_editable = ["is_open"]
    inlines = [BookingInline]

    @admin.display(description="开始（北京时间）", ordering="start")
    def start_local(self, slot: Slot) -> str:
        return _local(slot.start)

    @admin.display(description="结束（北京时间）", ordering="end")
    def end_local(self, slot: Slot) -> str:
        return _local(slot.end)

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.booked:
            return ["booked", *TIME_FIELDS]  # the customer's appointment: shown, not editable
        return ["booked"]

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or request.user.has_perm(MANAGE)

    def has_add_permission(self, request):
        return request.user.has_perm(MANAGE)

    def has_change_permission(self, request, obj=None):
        return request.user.has_perm(MANAGE)

    def has_delete_permission(self, request, obj=None):
        return request.user.has_perm(MANAGE)

    def save_model(self, request, obj, form, change):
        if not change:
            obj.save()
            return
        changes = {name: form.cleaned_data[name] for name in form.changed_data if name in form.cleaned_data}
        if "teacher" in changes:
            changes["teacher_id"] = changes.pop("teacher").pk
        try:  # the service repeats the guards in its UPDATE: a booking made meanwhile wins
            services.slot_update(slot_id=obj.pk, **changes)
        except ShopError as exc:
            request._starmall_refused = True
            messages.error(request, f"{obj}: 未保存：{exc.message}")

    def response_change(self, request, obj):
        if getattr(request, "_starmall_refused", False):
            return HttpResponseRedirect(request.path)  # no "changed successfully" for a refusal
        return super().response_change(request, obj)


@admin.register(Booking)
class BookingAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "slot", "order_no", "customer", "created_at"]
    search_fields = ["order_no", "customer__openid"]
    list_filter = ["slot__teacher"]
