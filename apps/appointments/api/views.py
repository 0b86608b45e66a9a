from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.appointments import availability, selectors
from apps.appointments.api.serializers import (
    AvailabilityQuerySerializer,
    AvailabilitySerializer,
    SlotQuerySerializer,
    SlotSerializer,
)
from apps.catalog.selectors import teacher_get
from starmall.api.schema import errors
from starmall.errors import NotFound


class TeacherSlotListView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(parameters=[SlotQuerySerializer], responses=SlotSerializer(many=True))
    def get(self, request, teacher_id: int):
        query = SlotQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        if teacher_get(teacher_id=teacher_id) is None:
            raise NotFound("老师不存在。", teacher_id=teacher_id)
        slots = selectors.slot_list(teacher_id=teacher_id, **query.validated_data)
        return Response(SlotSerializer(slots, many=True).data)


class TeacherAvailabilityView(APIView):
    """``GET /api/v1/teachers/{id}/availability``: the bookable starts of one service, per date."""

    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=[AvailabilityQuerySerializer],
        responses={200: AvailabilitySerializer, **errors(e400="invalid", e404="not_found")},
    )
    def get(self, request, teacher_id: int):
        query = AvailabilityQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        teacher = availability.teacher_or_404(teacher_id)
        service = availability.service_for(teacher=teacher, product_id=query.validated_data["product_id"])
        days = availability.availability(
            teacher=teacher, service=service, start=query.validated_data["start"], end=query.validated_data["end"]
        )
        data = {
            "teacher_id": teacher.pk,
            "product_id": service.product_id,
            "duration_minutes": service.duration_minutes,
            "days": [{"date": date, "starts": [timezone.localtime(s) for s in starts]} for date, starts in days],
        }
        return Response(AvailabilitySerializer(data).data)
