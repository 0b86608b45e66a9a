"""Almanac endpoints (public: no token needed). Answers are cached in Redis (``caching.py``)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.almanac import caching, selectors, synonyms
from apps.almanac.api.serializers import (
    MONTH_PATTERN,
    ActivitiesSerializer,
    DayPathSerializer,
    DaySerializer,
    MonthPathSerializer,
    MonthSerializer,
    SearchQuerySerializer,
    SearchSerializer,
)
from starmall.api.schema import ErrorSerializer

_ERRORS = {400: ErrorSerializer, 404: ErrorSerializer}  # API.md error body


class _Public(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]


class DayView(_Public):
    @extend_schema(
        summary="One day of the almanac (黄历)",
        parameters=[OpenApiParameter("date", OpenApiTypes.DATE, OpenApiParameter.PATH)],
        responses={200: DaySerializer, **_ERRORS},
        description="404 `not_found` when the date is not loaded; `detail.loaded` lists the loaded ranges.",
    )
    def get(self, request, date: str):
        params = DayPathSerializer(data={"date": date})
        params.is_valid(raise_exception=True)
        day = params.validated_data["date"]
        data = caching.get_or_compute(f"day:{day.isoformat()}", lambda: DaySerializer(selectors.day_get(day)).data)
        return Response(data)


class MonthView(_Public):
    @extend_schema(
        summary="Every day of a Gregorian month, for calendars",
        parameters=[
            OpenApiParameter(
                "month", {"type": "string", "pattern": MONTH_PATTERN}, OpenApiParameter.PATH, description="YYYY-MM"
            )
        ],
        responses={200: MonthSerializer, **_ERRORS},
        description="404 `not_found` unless the whole month is loaded.",
    )
    def get(self, request, month: str):
        params = MonthPathSerializer(data={"month": month})
        params.is_valid(raise_exception=True)
        year, number = params.validated_data["month"]
        key = f"{year:04d}-{number:02d}"
        data = caching.get_or_compute(
            f"month:{key}",
            lambda: MonthSerializer({"month": key, "days": selectors.month_days(year=year, month=number)}).data,
        )
        return Response(data)


class SearchView(_Public):
    @extend_schema(
        summary="Days good (宜 and not 忌) for an activity",
        parameters=[SearchQuerySerializer],
        responses={200: SearchSerializer, **_ERRORS},
        description=(
            f"{synonyms.RULE} The word goes through the synonym table (搬家 -> 移徙, 入宅); an "
            "unknown word is 400 `invalid` with `detail.suggestions`. The whole window "
            "[start, start + days - 1] must be loaded, else 404 `not_found`."
        ),
    )
    def get(self, request):
        params = SearchQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        q = params.validated_data
        start = q.get("start") or timezone.localdate()
        key = f"search:{synonyms.normalize(q['activity'])}:{start.isoformat()}:{q['days']}:{q.get('limit')}"

        def compute() -> dict:
            found = selectors.search(activity=q["activity"], start=start, days=q["days"], limit=q.get("limit"))
            out = {
                "activity": found.activity,
                "terms": found.terms,
                "rule": synonyms.RULE,
                "start": found.start,
                "end": found.end,
                "count": len(found.days),
                "results": found.days,
            }
            return SearchSerializer(out, context={"terms": found.terms}).data

        data = caching.get_or_compute(key, compute)
        return Response({**data, "activity": q["activity"]})


class ActivitiesView(_Public):
    @extend_schema(summary="The synonym table and the searchable terms", responses=ActivitiesSerializer)
    def get(self, request):
        out = {
            "rule": synonyms.RULE,
            "words": [{"word": w, "terms": list(t)} for w, t in synonyms.SYNONYMS.items()],
            "terms": sorted(synonyms.TERMS),
            "markers": sorted(synonyms.MARKERS),
        }
        return Response(ActivitiesSerializer(out).data)
