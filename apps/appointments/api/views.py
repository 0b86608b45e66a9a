from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.appointments import selectors
from apps.appointments.api.serializers import SlotQuerySerializer, SlotSerializer
from apps.catalog.selectors import teacher_get
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
