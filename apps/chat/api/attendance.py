"""``POST /api/v1/teacher/bookings/{order_no}/attendance``: the signed-in teacher marks one of
their own bookings (``apps.payments.attendance``: ``teacher_absent`` refunds in full)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.appointments.selectors import booking_json
from apps.catalog.selectors import teacher_for_customer
from apps.chat.exceptions import Forbidden
from apps.orders.api.serializers import BookingOutSerializer
from apps.payments import attendance
from starmall.api.schema import errors


class AttendanceSerializer(serializers.Serializer):
    attendance = serializers.ChoiceField(choices=["attended", "no_show", "teacher_absent"])


class TeacherAttendanceView(APIView):
    """200 with the order's ``booking``; 403 not a teacher, 404 not their booking, 409
    ``invalid_state`` before the start or once completed, refunded or ``teacher_absent``."""

    @extend_schema(
        request=AttendanceSerializer,
        responses={
            200: BookingOutSerializer,
            **errors(
                e403="forbidden (the caller is not a teacher)",
                e409="invalid_state (not started yet; completed, refunded or teacher_absent)",
            ),
        },
    )
    def post(self, request, order_no: str):
        body = AttendanceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        teacher = teacher_for_customer(request.user.pk)
        if teacher is None:
            raise Forbidden("只有老师可以标记到场。")
        attendance.attendance_mark(
            order_no=order_no,
            attendance=body.validated_data["attendance"],
            actor=f"teacher:{teacher.pk}",
            teacher_id=teacher.pk,
        )
        return Response(booking_json(order_no=order_no))
