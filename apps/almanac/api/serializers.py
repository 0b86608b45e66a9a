"""Input and output shapes of the almanac API (docs/API.md "Almanac"; more fields welcome)."""

from __future__ import annotations

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.almanac import synonyms
from apps.almanac.compute import BEIJING
from starmall.api import fields

# --- input -----------------------------------------------------------------------------------


IsoDateField = fields.DateField  # ``YYYY-MM-DD`` exactly (API.md); ``2025-6-1`` or ``20250601`` is 400


class DayPathSerializer(serializers.Serializer):
    date = IsoDateField(input_formats=["%Y-%m-%d"], help_text="YYYY-MM-DD")


#: ``YYYY-MM``, year 0001 to 9999, month 01 to 12: what the month path takes (the schema says it too).
MONTH_PATTERN = r"^([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-(0[1-9]|1[0-2])$"


@extend_schema_field({"type": "string", "enum": synonyms.searchable_words()})
class ActivityField(fields.CharField):
    """An activity: an everyday word (搬家) or an almanac term (移徙) that can be 宜. The schema
    lists them (``synonyms.searchable_words``); the server also folds decorations (宜搬家, 搬家吉日)
    and traditional characters; another word is 400 ``invalid`` with ``detail.suggestions``."""


@extend_schema_field({"type": "string", "enum": ["", *synonyms.searchable_words()]})
class GoodForField(ActivityField):
    """``good_for``: an activity as :class:`ActivityField`, or empty for none."""

    def __init__(self, **kwargs):
        super().__init__(required=False, allow_blank=True, max_length=20, **kwargs)


class MonthPathSerializer(serializers.Serializer):
    month = fields.CharField(help_text="YYYY-MM")

    def validate_month(self, value: str) -> tuple[int, int]:
        match = re.fullmatch(MONTH_PATTERN, value)
        if not match:
            raise serializers.ValidationError("请使用 YYYY-MM 格式，例如 2025-06。")
        return int(match[1]), int(match[2])


class SearchQuerySerializer(serializers.Serializer):
    activity = ActivityField(max_length=20, help_text="everyday word (搬家, 结婚, 开业) or almanac term (移徙, 嫁娶)")
    start = IsoDateField(
        required=False, input_formats=["%Y-%m-%d"], help_text="first day, default today (Asia/Shanghai)"
    )
    days = fields.IntegerField(
        required=False, default=30, min_value=1, max_value=366, help_text="window length in days"
    )
    limit = fields.IntegerField(
        required=False,
        min_value=1,
        max_value=366,
        help_text="at most this many good days (the first ones); default: all in the window",
    )


# --- output ----------------------------------------------------------------------------------


class LunarSerializer(serializers.Serializer):
    year = fields.IntegerField(source="lunar_year")
    month = fields.IntegerField(source="lunar_month", help_text="1..12; a leap month repeats the number")
    day = fields.IntegerField(source="lunar_day")
    is_leap = fields.BooleanField()
    text = fields.CharField(source="lunar_text", help_text="闰冬月初一")
    month_text = fields.CharField(source="lunar_month_text")
    day_text = fields.CharField(source="lunar_day_text")
    year_ganzhi = fields.CharField(help_text="干支 of the lunar year (from 正月初一)")


class GanzhiSerializer(serializers.Serializer):
    year = fields.CharField(source="year_ganzhi", help_text="from 正月初一 (lunar-python's default)")
    month = fields.CharField(source="month_ganzhi", help_text="month pillar by day (sect 1)")
    day = fields.CharField(source="day_ganzhi")
    year_by_lichun = fields.CharField(source="year_ganzhi_lichun", help_text="from the day of 立春")


class ChongSerializer(serializers.Serializer):
    zodiac = fields.CharField(source="chong_zodiac")
    ganzhi = fields.CharField(source="chong_ganzhi")
    sha = fields.CharField(help_text="煞 direction")
    text = serializers.SerializerMethodField()

    def get_text(self, day) -> str:
        return f"冲{day.chong_zodiac}({day.chong_ganzhi})煞{day.sha}"


class SourceSerializer(serializers.Serializer):
    name = fields.CharField(source="source")
    version = fields.CharField(source="source_version")
    sect = fields.IntegerField()


class DaySerializer(serializers.Serializer):
    date = serializers.DateField()
    lunar = LunarSerializer(source="*")
    ganzhi = GanzhiSerializer(source="*")
    zodiac = fields.CharField(help_text="生肖 of the lunar year")
    solar_term = serializers.SerializerMethodField(help_text="节气 on this date (Beijing time), or null")
    solar_term_at = serializers.SerializerMethodField(help_text="its instant, +08:00, or null")
    yi = serializers.ListField(child=fields.CharField(), help_text="宜, markers such as 馀事勿取 included")
    ji = serializers.ListField(child=fields.CharField(), help_text="忌, markers such as 诸事不宜 included")
    chong = ChongSerializer(source="*", help_text="冲/煞")
    pengzu = serializers.SerializerMethodField(help_text="彭祖百忌 (stem, branch)")
    zhishen = fields.CharField(help_text="值神")
    zhishen_type = fields.CharField(help_text="黄道 or 黑道")
    jianchu = fields.CharField(help_text="建除十二值星")
    jishen = serializers.ListField(child=fields.CharField(), help_text="吉神宜趋")
    xiongsha = serializers.ListField(child=fields.CharField(), help_text="凶煞宜忌")
    festivals = serializers.ListField(child=fields.CharField())
    source = SourceSerializer(source="*")

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_solar_term(self, day) -> str | None:
        return day.solar_term or None

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_solar_term_at(self, day) -> str | None:
        # Beijing time with a fixed +08:00 (the instant as lunar-python gives it), not the
        # Asia/Shanghai zone, which had summer time in 1986-1991.
        return day.solar_term_at.astimezone(BEIJING).isoformat() if day.solar_term_at else None

    def get_pengzu(self, day) -> list[str]:
        return [day.pengzu_gan, day.pengzu_zhi]


class MonthSerializer(serializers.Serializer):
    month = fields.CharField(help_text="YYYY-MM")
    days = DaySerializer(many=True)


class SearchDaySerializer(serializers.Serializer):
    date = serializers.DateField()
    lunar_text = fields.CharField()
    yi = serializers.ListField(child=fields.CharField())
    ji = serializers.ListField(child=fields.CharField())
    matched = serializers.SerializerMethodField(help_text="the activity's terms that are 宜 this day")

    def get_matched(self, day) -> list[str]:
        return [term for term in self.context["terms"] if term in day.yi]


class SearchSerializer(serializers.Serializer):
    activity = fields.CharField()
    terms = serializers.ListField(child=fields.CharField(), help_text="almanac terms the word stands for")
    rule = fields.CharField()
    start = serializers.DateField()
    end = serializers.DateField(help_text="last day of the window (inclusive)")
    count = fields.IntegerField()
    results = SearchDaySerializer(many=True)


class ActivityWordSerializer(serializers.Serializer):
    word = fields.CharField()
    terms = serializers.ListField(child=fields.CharField())


class ActivitiesSerializer(serializers.Serializer):
    rule = fields.CharField()
    words = ActivityWordSerializer(many=True, help_text="the synonym table")
    terms = serializers.ListField(child=fields.CharField(), help_text="every searchable almanac term")
    markers = serializers.ListField(child=fields.CharField(), help_text="shown with days, not searchable")
