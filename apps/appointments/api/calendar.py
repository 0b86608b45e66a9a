"""Bookings as iCalendar: an order's event (the customer's) and a teacher's secret feed (public,
its token the only key)."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.appointments import calendar
from starmall.api.schema import errors

ICS = "text/calendar; charset=utf-8"


def _ics(body: bytes, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=ICS)
    response["Content-Disposition"] = f'inline; filename="{filename}"'
    response["Cache-Control"] = "private, no-store"
    return response


class _CalendarView(APIView):
    def perform_content_negotiation(self, request, force=False):
        """Errors are JSON whatever Accept asks for; the calendar itself is text/calendar."""
        return super().perform_content_negotiation(request, force=True)


class OrderCalendarView(_CalendarView):
    """``GET /api/v1/orders/{no}/calendar.ics``: the caller's booking of the order, one VEVENT."""

    @extend_schema(
        responses={
            (200, "text/calendar"): OpenApiResponse(OpenApiTypes.STR, description="one VEVENT"),
            **errors(e404="not_found (no booking of the caller's with that order number)"),
        }
    )
    def get(self, request, order_no: str):
        return _ics(calendar.order_ics(customer_id=request.user.pk, order_no=order_no), f"{order_no}.ics")


class TeacherFeedView(_CalendarView):
    """``GET /api/v1/calendars/{token}.ics`` (public: the token is the key): a teacher's bookings."""

    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(
        auth=[],
        responses={
            (200, "text/calendar"): OpenApiResponse(OpenApiTypes.STR, description="the teacher's bookings"),
            **errors(e404="not_found (no such token, or it was replaced)"),
        },
    )
    def get(self, request, token: str):
        return _ics(calendar.feed_ics(token=token), "bookings.ics")
