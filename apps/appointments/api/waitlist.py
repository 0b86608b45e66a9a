"""The waitlist's HTTP side: join a full date, list and leave one's entries (API.md "Booking")."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.appointments import waitlist
from apps.appointments.models import WaitlistEntry
from apps.catalog.selectors import teacher_get
from starmall.api import fields
from starmall.api.schema import MAX_ID, errors
from starmall.errors import NotFound

Status = WaitlistEntry.Status


class WaitlistJoinSerializer(serializers.Serializer):
    product_id = fields.IntegerField(min_value=1, max_value=MAX_ID)
    date = fields.DateField()


class WaitlistEntrySerializer(serializers.Serializer):
    id = fields.IntegerField()
    product_id = fields.IntegerField()
    date = serializers.DateField()
    status = fields.CharField()
    created_at = serializers.DateTimeField()


class WaitlistQuerySerializer(serializers.Serializer):
    status = fields.FilterChoiceField(choices=[Status.WAITING, Status.NOTIFIED, Status.BOOKED, Status.EXPIRED])


class TeacherWaitlistView(APIView):
    """``POST /api/v1/teachers/{id}/waitlist``: wait for a start on a full date."""

    @extend_schema(
        request=WaitlistJoinSerializer,
        responses={
            201: WaitlistEntrySerializer,
            200: WaitlistEntrySerializer,
            **errors(
                e400="invalid (the product is not a service of the teacher)",
                e404="not_found (no such teacher)",
                e409="invalid_state (the date is past or still lists starts), limit_exceeded (3 waiting)",
            ),
        },
    )
    def post(self, request, teacher_id: int):
        data = WaitlistJoinSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if teacher_get(teacher_id=teacher_id) is None:
            raise NotFound("老师不存在。", teacher_id=teacher_id)
        entry, created = waitlist.waitlist_join(
            customer_id=request.user.pk, teacher_id=teacher_id, **data.validated_data
        )
        answer = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(WaitlistEntrySerializer(entry).data, status=answer)


class MyWaitlistView(ListAPIView):
    """``GET /api/v1/me/waitlist?status=``: the caller's entries, newest first (paginated)."""

    serializer_class = WaitlistEntrySerializer

    @extend_schema(parameters=[WaitlistQuerySerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = WaitlistQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return waitlist.waitlist_list(customer_id=self.request.user.pk, status=query.validated_data.get("status"))


class MyWaitlistEntryView(APIView):
    """``DELETE /api/v1/me/waitlist/{id}``: leave the waitlist (204)."""

    @extend_schema(responses={204: None, **errors(e404="not_found (no such entry of the caller)")})
    def delete(self, request, entry_id: int):
        waitlist.waitlist_leave(customer_id=request.user.pk, entry_id=entry_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
