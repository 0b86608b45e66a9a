"""Back office for slots: changed only by holders of ``appointments.manage_slot``, through
``slots.slot_update`` (capacity never below the live bookings in the slot's time, a booked
slot's time never moves);
times shown in Shanghai time.

A staff user linked to a teacher (``Teacher.user``, the teacher role) sees only that teacher's
slots and days off, and blocks or unblocks them with the actions (``slots.slot_block`` /
``day_block``: a booked slot is refused, with the reason, per slot).
"""

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.utils import timezone

from apps.appointments import slots
from apps.appointments.models import Booking, DateOverride, DayOff, Slot, WaitlistEntry
from apps.catalog.selectors import teacher_for_user
from starmall.admin import Outcome, ReadOnlyModelAdmin, report, require_perm
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
        booked = slots.slot_live_bookings(self.instance) if self.instance.pk else 0
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
    list_display = ["id", "teacher", "start_local", "end_local", "capacity", "live_bookings", "is_open"]
    list_filter = ["teacher", "is_open"]
    date_hierarchy = "start"
    list_editable = ["is_open"]
    inlines = [BookingInline]
    actions = ["block_slots", "unblock_slots", "block_days", "unblock_days"]

    # --- a teacher sees and changes only their own slots ---------------------------------
    def get_queryset(self, request):
        qs = slots.with_live_bookings(super().get_queryset(request).select_related("teacher"))
        teacher = teacher_for_user(request.user)
        return qs.filter(teacher=teacher) if teacher is not None else qs

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        if teacher_for_user(request.user) is not None:
            changelist.list_editable = ()  # a teacher blocks through the actions (booked: refused)
        return changelist

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        teacher = teacher_for_user(request.user)
        if db_field.name == "teacher" and teacher is not None:
            kwargs["queryset"] = type(teacher).objects.filter(pk=teacher.pk)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def _block(self, request, queryset, blocked: bool, verb: str):
        require_perm(request, MANAGE)
        outcomes = []
        for slot in self.get_queryset(request).filter(pk__in=queryset.values("pk")):
            try:
                slots.slot_block(slot_id=slot.pk, blocked=blocked)
                outcomes.append(Outcome(str(slot), messages.SUCCESS, "已停约" if blocked else "已开放"))
            except ShopError as exc:
                outcomes.append(Outcome(str(slot), messages.ERROR, exc.message))
        report(request, verb, outcomes)

    @admin.action(description="停约所选时段（已有预约的不能停约）", permissions=["manage_slot"])
    def block_slots(self, request, queryset):
        self._block(request, queryset, True, "停约")

    @admin.action(description="重新开放所选时段", permissions=["manage_slot"])
    def unblock_slots(self, request, queryset):
        self._block(request, queryset, False, "开放")

    def _days(self, request, queryset, blocked: bool, verb: str):
        require_perm(request, MANAGE)
        days = sorted(
            {
                (s.teacher_id, timezone.localtime(s.start).date(), str(s.teacher))
                for s in self.get_queryset(request).filter(pk__in=queryset.values("pk"))
            }
        )
        outcomes = []
        for teacher_id, date, name in days:
            result = slots.day_block(teacher_id=teacher_id, date=date, blocked=blocked)
            label = f"{name} {date:%Y-%m-%d}"
            outcomes.append(
                Outcome(
                    label,
                    messages.SUCCESS if not result.refused else messages.WARNING,
                    f"{'休息' if blocked else '恢复工作'}，{len(result.changed)} 个时段已变更",
                )
            )
            outcomes += [Outcome(f"{label} #{slot_id}", messages.ERROR, reason) for slot_id, reason in result.refused]
        report(request, verb, outcomes)

    @admin.action(description="把所选时段所在的日期设为休息日", permissions=["manage_slot"])
    def block_days(self, request, queryset):
        self._days(request, queryset, True, "设为休息日")

    @admin.action(description="取消所选时段所在日期的休息日", permissions=["manage_slot"])
    def unblock_days(self, request, queryset):
        self._days(request, queryset, False, "取消休息日")

    def has_manage_slot_permission(self, request):
        return request.user.has_perm(MANAGE)

    @admin.display(description="开始（北京时间）", ordering="start")
    def start_local(self, slot: Slot) -> str:
        return _local(slot.start)

    @admin.display(description="结束（北京时间）", ordering="end")
    def end_local(self, slot: Slot) -> str:
        return _local(slot.end)

    @admin.display(description="已约")
    def live_bookings(self, slot: Slot) -> int:
        counted = getattr(slot, "live_bookings", None)  # annotated by get_queryset
        return slots.slot_live_bookings(slot) if counted is None else counted

    def get_readonly_fields(self, request, obj=None):
        if teacher_for_user(request.user) is not None and obj is not None:
            return ["live_bookings", "is_open", *TIME_FIELDS]  # a teacher: block/unblock with the actions
        if obj is not None and slots.slot_live_bookings(obj):
            return ["live_bookings", *TIME_FIELDS]  # the customer's appointment: shown, not editable
        return ["live_bookings"]

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
            slots.slot_update(slot_id=obj.pk, **changes)
        except ShopError as exc:
            request._starmall_refused = True
            messages.error(request, f"{obj}: 未保存：{exc.message}")

    def response_change(self, request, obj):
        if getattr(request, "_starmall_refused", False):
            return HttpResponseRedirect(request.path)  # no "changed successfully" for a refusal
        return super().response_change(request, obj)


@admin.register(Booking)
class BookingAdmin(ReadOnlyModelAdmin):
    """Bookings by time, filterable by teacher, attendance and live; a teacher's staff login
    sees only their own."""

    list_display = [
        "id",
        "teacher",
        "start_local",
        "end_local",
        "order_no",
        "customer",
        "live",
        "attendance",
        "reschedules",
    ]
    search_fields = ["order_no", "customer__openid"]
    list_filter = ["teacher", "attendance", "live"]

    def get_queryset(self, request):
        qs = super().get_queryset(request).select_related("teacher", "customer")
        teacher = teacher_for_user(request.user)
        return qs.filter(teacher=teacher) if teacher is not None else qs

    @admin.display(description="开始", ordering="start")
    def start_local(self, obj):
        return _local(obj.start)

    @admin.display(description="结束", ordering="end")
    def end_local(self, obj):
        return _local(obj.end)


@admin.register(DateOverride)
class DateOverrideAdmin(ReadOnlyModelAdmin):
    """Dates with other hours or off; set by clicking the day in the teacher's week (营业时间)."""

    list_display = ["id", "teacher", "date", "off", "windows"]
    list_filter = ["teacher", "off"]


class DayOffForm(forms.ModelForm):
    class Meta:
        model = DayOff
        fields = ["teacher", "date"]


@admin.register(DayOff)
class DayOffAdmin(admin.ModelAdmin):
    """Days off: adding one calls ``day_block`` (closes the day's free slots, reports booked
    ones), deleting one calls ``day_block(blocked=False)``. A teacher sees only their own."""

    form = DayOffForm
    list_display = ["id", "teacher", "date", "created_at"]
    list_filter = ["teacher"]

    def get_queryset(self, request):
        qs = super().get_queryset(request).select_related("teacher")
        teacher = teacher_for_user(request.user)
        return qs.filter(teacher=teacher) if teacher is not None else qs

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        teacher = teacher_for_user(request.user)
        if db_field.name == "teacher" and teacher is not None:
            kwargs["queryset"] = type(teacher).objects.filter(pk=teacher.pk)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or request.user.has_perm(MANAGE)

    def has_add_permission(self, request):
        return request.user.has_perm(MANAGE)

    def has_change_permission(self, request, obj=None):
        return False  # a day off is added or deleted, never edited

    def has_delete_permission(self, request, obj=None):
        return request.user.has_perm(MANAGE)

    def save_model(self, request, obj, form, change):
        require_perm(request, MANAGE)
        result = slots.day_block(teacher_id=obj.teacher_id, date=obj.date, blocked=True)
        obj.pk = DayOff.objects.get(teacher_id=obj.teacher_id, date=obj.date).pk
        for slot_id, reason in result.refused:
            messages.warning(request, f"时段 #{slot_id}：{reason}")

    def delete_model(self, request, obj):
        require_perm(request, MANAGE)
        slots.day_block(teacher_id=obj.teacher_id, date=obj.date, blocked=False)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.delete_model(request, obj)


from apps.appointments import admin_teacher  # noqa: E402, F401 - the teacher page's inlines


@admin.register(WaitlistEntry)
class WaitlistEntryAdmin(ReadOnlyModelAdmin):
    """Who waits for a full date, and whether the freed start was announced (the sweep in
    ``waitlist.py`` writes these rows; staff only look). A teacher's login sees their own."""

    list_display = ["id", "teacher", "product", "date", "customer", "status", "message", "notified_at", "created_at"]
    list_filter = ["status", "teacher", "date"]
    search_fields = ["customer__openid", "customer__nickname"]
    date_hierarchy = "date"

    def get_queryset(self, request):
        qs = super().get_queryset(request).select_related("teacher", "product", "customer")
        teacher = teacher_for_user(request.user)
        return qs.filter(teacher=teacher) if teacher is not None else qs
