"""The booking admin's attendance actions (已到 / 顾客爽约 / 老师缺席), through the same service
and permission (``appointments.mark_attendance``) as the teacher's API and ``manage.py
consultation_attendance``. Here, at payments' level, because 老师缺席 refunds in full: the
appointments app's BookingAdmin is registered again with the actions added."""

from django.contrib import admin, messages

from apps.appointments.admin import BookingAdmin
from apps.appointments.models import Attendance, Booking
from apps.payments import attendance
from starmall.admin import Outcome, report, require_perm
from starmall.errors import ShopError


class BookingAttendanceAdmin(BookingAdmin):
    actions = ["mark_attended", "mark_no_show", "mark_teacher_absent"]

    def has_attendance_permission(self, request):
        return request.user.has_perm(attendance.PERMISSION)

    def _mark(self, request, queryset, mark: str) -> None:
        require_perm(request, attendance.PERMISSION)
        outcomes = []
        for booking in queryset.order_by("pk"):
            try:
                attendance.attendance_mark_by_staff(
                    order_no=booking.order_no, attendance=mark, username=request.user.get_username()
                )
            except ShopError as exc:
                outcomes.append(Outcome(booking.order_no, messages.WARNING, f"未标记：{exc.message}"))
                continue
            outcomes.append(Outcome(booking.order_no, messages.SUCCESS, Attendance(mark).label))
        report(request, "标记到场", outcomes)

    @admin.action(description="标记：已到", permissions=["attendance"])
    def mark_attended(self, request, queryset):
        self._mark(request, queryset, Attendance.ATTENDED)

    @admin.action(description="标记：顾客爽约（不退款）", permissions=["attendance"])
    def mark_no_show(self, request, queryset):
        self._mark(request, queryset, Attendance.NO_SHOW)

    @admin.action(description="标记：老师缺席（立即全额退款，不可再改）", permissions=["attendance"])
    def mark_teacher_absent(self, request, queryset):
        self._mark(request, queryset, Attendance.TEACHER_ABSENT)


admin.site.unregister(Booking)
admin.site.register(Booking, BookingAttendanceAdmin)
