"""The consultation's HTTP side beside the chat: the teacher's schedule, the customer's
consultations, the public teacher card."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import ListAPIView
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.appointments import calendar
from apps.appointments import selectors as slot_selectors
from apps.appointments.api.serializers import SlotQuerySerializer, SlotSerializer
from apps.appointments.selectors import slot_next_available, teacher_hours, teacher_services
from apps.catalog.selectors import teacher_for_customer, teacher_get
from apps.chat import consultations
from apps.chat.exceptions import Forbidden
from starmall.api import fields
from starmall.api.schema import errors
from starmall.errors import NotFound


class ScheduleBookingSerializer(serializers.Serializer):
    order_no = fields.CharField()
    status = fields.CharField()
    customer = serializers.DictField()
    remark = fields.CharField()
    chat_session_id = fields.IntegerField(allow_null=True)


class ScheduleSlotSerializer(serializers.Serializer):
    id = fields.IntegerField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    capacity = fields.IntegerField()
    booked = fields.IntegerField()
    is_open = fields.BooleanField()
    bookings = ScheduleBookingSerializer(many=True)


class ScheduleSerializer(serializers.Serializer):
    teacher = serializers.DictField()
    slots = ScheduleSlotSerializer(many=True)
    ics_url = fields.CharField(help_text="the teacher's secret calendar feed (subscribe in a calendar app)")


class IcsTokenSerializer(serializers.Serializer):
    ics_url = fields.CharField()


class ScheduleQuerySerializer(SlotQuerySerializer):
    good_for = None  # not offered here


class TeacherScheduleView(APIView):
    """``GET /api/v1/teacher/schedule?from=&to=``: the signed-in teacher's slots and bookings."""

    @extend_schema(
        parameters=[ScheduleQuerySerializer],
        responses={200: ScheduleSerializer, **errors(e403="forbidden (the caller is not a teacher)")},
    )
    def get(self, request):
        query = ScheduleQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        teacher = teacher_for_customer(request.user.pk)
        if teacher is None:
            raise Forbidden("只有老师可以查看排班。")
        slots = consultations.teacher_schedule(
            teacher=teacher, start=query.validated_data["start"], end=query.validated_data["end"]
        )
        return Response(
            {
                "teacher": {"id": teacher.pk, "name": teacher.name, "title": teacher.title},
                "slots": slots,
                "ics_url": calendar.feed_url(calendar.feed_token(teacher_id=teacher.pk)),
            }
        )


class TeacherIcsTokenView(APIView):
    """``POST /api/v1/teacher/ics-token``: a new secret feed URL; the old one answers 404."""

    @extend_schema(
        request=None,
        responses={200: IcsTokenSerializer, **errors(e403="forbidden (the caller is not a teacher)")},
    )
    def post(self, request):
        teacher = teacher_for_customer(request.user.pk)
        if teacher is None:
            raise Forbidden("只有老师可以更换日历订阅地址。")
        return Response({"ics_url": calendar.feed_url(calendar.feed_token_replace(teacher_id=teacher.pk))})


class ConsultationQuerySerializer(serializers.Serializer):
    status = fields.FilterChoiceField(choices=["upcoming", "past"])


class ConsultationSerializer(serializers.Serializer):
    """API.md: ``{"order_no", "teacher", "slot", "status", "chat_session_id"}``."""

    order_no = fields.CharField()
    teacher = serializers.SerializerMethodField()
    slot = serializers.SerializerMethodField()
    status = fields.CharField()
    chat_session_id = serializers.SerializerMethodField()

    def _booking(self, order):
        """The order's booking; the bookings of the whole page are read at once."""
        found = self.context.setdefault("bookings", {})
        if order.order_no not in found:
            page = getattr(self.parent, "instance", None) or [order]
            found.update(slot_selectors.bookings_of(o.order_no for o in page))
        return found[order.order_no]

    def get_teacher(self, order) -> dict:
        teacher = self._booking(order).teacher
        return {"id": teacher.pk, "name": teacher.name, "title": teacher.title}

    def get_slot(self, order) -> dict:
        return slot_selectors.slot_json(self._booking(order))

    def get_chat_session_id(self, order) -> int | None:
        session = getattr(order, "chat_session", None)
        return session.pk if session is not None else None


class ConsultationListView(ListAPIView):
    serializer_class = ConsultationSerializer

    @extend_schema(parameters=[ConsultationQuerySerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = ConsultationQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return consultations.consultation_list(
            customer_id=self.request.user.pk, status=query.validated_data.get("status")
        )


class TeacherServiceSerializer(serializers.Serializer):
    product_id = fields.IntegerField()
    sku_id = fields.IntegerField(allow_null=True)
    name = fields.CharField()
    duration_minutes = fields.IntegerField()
    price_fen = fields.IntegerField(allow_null=True)


class TeacherOverrideSerializer(serializers.Serializer):
    date = fields.CharField()
    off = serializers.BooleanField()
    hours = serializers.ListField(child=serializers.ListField(child=fields.CharField()))


class TeacherHoursSerializer(serializers.Serializer):
    """Weekly windows by weekday ("1" = Monday .. "7"), overrides of the next horizon_days, rules."""

    weekly = serializers.DictField(child=serializers.ListField(child=serializers.ListField(child=fields.CharField())))
    overrides = TeacherOverrideSerializer(many=True)
    buffer_minutes = fields.IntegerField()
    min_notice_minutes = fields.IntegerField()
    horizon_days = fields.IntegerField()
    step_minutes = fields.IntegerField()
    daily_max = fields.IntegerField(allow_null=True)


class TeacherCardSerializer(serializers.Serializer):
    """API.md: ``{"id", "name", "title", "bio", "photo_url", "specialties", "rating", "product_id", "next_slots",
    "services", "hours"}``."""

    id = fields.IntegerField()
    name = fields.CharField()
    title = fields.CharField()
    bio = fields.CharField()
    photo_url = fields.CharField()
    specialties = serializers.ListField(child=fields.CharField())
    rating = fields.FloatField(allow_null=True)
    product_id = fields.IntegerField(allow_null=True)
    next_slots = SlotSerializer(many=True)
    services = TeacherServiceSerializer(many=True)
    hours = TeacherHoursSerializer()


class TeacherCardView(APIView):
    """``GET /api/v1/teachers/{id}`` (public): the teacher card with the next free slots."""

    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(responses={200: TeacherCardSerializer, **errors(e404="not_found")})
    def get(self, request, teacher_id: int):
        teacher = teacher_get(teacher_id=teacher_id)
        if teacher is None:
            raise NotFound("老师不存在。", teacher_id=teacher_id)
        return Response(
            TeacherCardSerializer(
                {
                    "id": teacher.pk,
                    "name": teacher.name,
                    "title": teacher.title,
                    "bio": teacher.bio,
                    "photo_url": teacher.photo_url,
                    "specialties": teacher.specialties or [],
                    "rating": consultations.teacher_rating(teacher),
                    "product_id": teacher.product_id,
                    "next_slots": slot_next_available(teacher_id=teacher.pk, limit=5),
                    "services": teacher_services(teacher),
                    "hours": teacher_hours(teacher),
                }
            ).data
        )
