"""Input and output shapes of the almanac API (docs/API.md "Almanac"; more fields welcome)."""

from __future__ import annotations

import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.almanac.compute import BEIJING

# --- input -----------------------------------------------------------------------------------


class IsoDateField(serializers.DateField):
    """A date written exactly ``YYYY-MM-DD`` (API.md); ``2025-6-1`` or ``20250601`` is 400."""

    def to_internal_value(self, value):
        if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            self.fail("invalid", format="YYYY-MM-DD")
        return super().to_internal_value(value)


class DayPathSerializer(serializers.Serializer):
    date = IsoDateField(input_formats=["%Y-%m-%d"], help_text="YYYY-MM-DD")


class MonthPathSerializer(serializers.Serializer):
    month = serializers.CharField(help_text="YYYY-MM")

    def validate_month(self, value: str) -> tuple[int, int]:
        match = re.fullmatch(r"(\d{4})-(\d{2})", value)
        if not match or not 1 <= int(match[2]) <= 12 or int(match[1]) < 1:
            raise serializers.ValidationError("请使用 YYYY-MM 格式，例如 2025-06。")
        return int(match[1]), int(match[2])


class SearchQuerySerializer(serializers.Serializer):
    activity = serializers.CharField(
        max_length=20, help_text="everyday word (搬家, 结婚, 开业) or almanac term (移徙, 嫁娶)"
    )
    start = IsoDateField(
        required=False, input_formats=["%Y-%m-%d"], help_text="first day, default today (Asia/Shanghai)"
    )
    days = serializers.IntegerField(
        required=False, default=30, min_value=1, max_value=366, help_text="window length in days"
    )
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=366,
        help_text="at most this many good days (the first ones); default: all in the window",
    )


# --- output ----------------------------------------------------------------------------------


class LunarSerializer(serializers.Serializer):
    year = serializers.IntegerField(source="lunar_year")
    month = serializers.IntegerField(source="lunar_month", help_text="1..12; a leap month repeats the number")
    day = serializers.IntegerField(source="lunar_day")
    is_leap = serializers.BooleanField()
    text = serializers.CharField(source="lunar_text", help_text="闰冬月初一")
    month_text = serializers.CharField(source="lunar_month_text")
    day_text = serializers.CharField(source="lunar_day_text")
    year_ganzhi = serializers.CharField(help_text="干支 of the lunar year (from 正月初一)")


class GanzhiSerializer(serializers.Serializer):
    year = serializers.CharField(source="year_ganzhi", help_text="from 正月初一 (lunar-python's default)")
    month = serializers.CharField(source="month_ganzhi", help_text="month pillar by day (sect 1)")
    day = serializers.CharField(source="day_ganzhi")
    year_by_lichun = serializers.CharField(source="year_ganzhi_lichun", help_text="from the day of 立春")


class ChongSerializer(serializers.Serializer):
    zodiac = serializers.CharField(source="chong_zodiac")
    ganzhi = serializers.CharField(source="chong_ganzhi")
    sha = serializers.CharField(help_text="煞 direction")
    text = serializers.SerializerMethodField()

    def get_text(self, day) -> str:
        return f"冲{day.chong_zodiac}({day.chong_ganzhi})煞{day.sha}"


class SourceSerializer(serializers.Serializer):
    name = serializers.CharField(source="source")
    version = serializers.CharField(source="source_version")
    sect = serializers.IntegerField()


class DaySerializer(serializers.Serializer):
    date = serializers.DateField()
    lunar = LunarSerializer(source="*")
    ganzhi = GanzhiSerializer(source="*")
    zodiac = serializers.CharField(help_text="生肖 of the lunar year")
    solar_term = serializers.SerializerMethodField(help_text="节气 on this date (Beijing time), or null")
    solar_term_at = serializers.SerializerMethodField(help_text="its instant, +08:00, or null")
    yi = serializers.ListField(child=serializers.CharField(), help_text="宜, markers such as 馀事勿取 included")
    ji = serializers.ListField(child=serializers.CharField(), help_text="忌, markers such as 诸事不宜 included")
    chong = ChongSerializer(source="*", help_text="冲/煞")
    pengzu = serializers.SerializerMethodField(help_text="彭祖百忌 (stem, branch)")
    zhishen = serializers.CharField(help_text="值神")
    zhishen_type = serializers.CharField(help_text="黄道 or 黑道")
    jianchu = serializers.CharField(help_text="建除十二值星")
    jishen = serializers.ListField(child=serializers.CharField(), help_text="吉神宜趋")
    xiongsha = serializers.ListField(child=serializers.CharField(), help_text="凶煞宜忌")
    festivals = serializers.ListField(child=serializers.CharField())
    source = SourceSerializer(source="*")

    @extend_schema_field(OpenApiTypes.STR)
    def get_solar_term(self, day) -> str | None:
        return day.solar_term or None

    @extend_schema_field(OpenApiTypes.DATETIME)
    def get_solar_term_at(self, day) -> str | None:
        # Beijing time with a fixed +08:00 (the instant as lunar-python gives it), not the
        # Asia/Shanghai zone, which had summer time in 1986-1991.
        return day.solar_term_at.astimezone(BEIJING).isoformat() if day.solar_term_at else None

    def get_pengzu(self, day) -> list[str]:
        return [day.pengzu_gan, day.pengzu_zhi]


class MonthSerializer(serializers.Serializer):
    month = serializers.CharField(help_text="YYYY-MM")
    days = DaySerializer(many=True)


class SearchDaySerializer(serializers.Serializer):
    date = serializers.DateField()
    lunar_text = serializers.CharField()
    yi = serializers.ListField(child=serializers.CharField())
    ji = serializers.ListField(child=serializers.CharField())
    matched = serializers.SerializerMethodField(help_text="the activity's terms that are 宜 this day")

    def get_matched(self, day) -> list[str]:
        return [term for term in self.context["terms"] if term in day.yi]


class SearchSerializer(serializers.Serializer):
    activity = serializers.CharField()
    terms = serializers.ListField(child=serializers.CharField(), help_text="almanac terms the word stands for")
    rule = serializers.CharField()
    start = serializers.DateField()
    end = serializers.DateField(help_text="last day of the window (inclusive)")
    count = serializers.IntegerField()
    results = SearchDaySerializer(many=True)


class ActivityWordSerializer(serializers.Serializer):
    word = serializers.CharField()
    terms = serializers.ListField(child=serializers.CharField())


class ActivitiesSerializer(serializers.Serializer):
    rule = serializers.CharField()
    words = ActivityWordSerializer(many=True, help_text="the synonym table")
    terms = serializers.ListField(child=serializers.CharField(), help_text="every searchable almanac term")
    markers = serializers.ListField(child=serializers.CharField(), help_text="shown with days, not searchable")
