import datetime as dt

from django.utils import timezone
from rest_framework import serializers

from apps.almanac.api.serializers import GoodForField
from apps.appointments.models import Slot
from apps.appointments.slots import booking_open_after
from starmall.api import fields

MAX_RANGE_DAYS = 62
MAX_DISTANCE_DAYS = 366


class SlotQuerySerializer(serializers.Serializer):
    """``from``/``to``: dates (Shanghai), inclusive; default today .. today + 7."""

    from_ = fields.DateField(required=False)
    to = fields.DateField(required=False)
    good_for = GoodForField(help_text="only days good (宜, not 忌) for this activity, e.g. 开业")

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields

    def validate(self, attrs):
        today = timezone.localdate()
        for name in ("from", "to"):  # slots exist around today; far dates would overflow
            if name in attrs and abs((attrs[name] - today).days) > MAX_DISTANCE_DAYS:
                raise serializers.ValidationError({name: [f"须在今天前后 {MAX_DISTANCE_DAYS} 天以内。"]})
        start = attrs.get("from") or today
        end = attrs.get("to") or start + dt.timedelta(days=7)
        if end < start:
            raise serializers.ValidationError({"to": ["不能早于 from。"]})
        if (end - start).days > MAX_RANGE_DAYS:
            raise serializers.ValidationError({"to": [f"最多在 from 之后 {MAX_RANGE_DAYS} 天。"]})
        return {"start": start, "end": end, "good_for": attrs.get("good_for") or None}


class SlotSerializer(fields.ModelSerializer):
    available = serializers.SerializerMethodField()

    class Meta:
        model = Slot
        fields = ["id", "start", "end", "capacity", "booked", "available"]

    def get_available(self, slot) -> bool:
        return slot.available and slot.start > booking_open_after()  # BOOKING_MIN_NOTICE_MINUTES


class AvailabilityQuerySerializer(serializers.Serializer):
    """``product_id`` (default: the teacher's first service); ``from``/``to``: dates (Shanghai),
    inclusive, at most 31 days; default today .. today + 6."""

    product_id = serializers.IntegerField(required=False, min_value=1)
    from_ = fields.DateField(required=False)
    to = fields.DateField(required=False)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields

    def validate(self, attrs):
        today = timezone.localdate()
        for name in ("from", "to"):
            if name in attrs and abs((attrs[name] - today).days) > MAX_DISTANCE_DAYS:
                raise serializers.ValidationError({name: [f"须在今天前后 {MAX_DISTANCE_DAYS} 天以内。"]})
        start = attrs.get("from") or today
        end = attrs.get("to") or start + dt.timedelta(days=6)
        if end < start:
            raise serializers.ValidationError({"to": ["不能早于 from。"]})
        if (end - start).days >= 31:
            raise serializers.ValidationError({"to": ["最多查询 31 天。"]})
        return {"product_id": attrs.get("product_id"), "start": start, "end": end}


class AvailabilityDaySerializer(serializers.Serializer):
    date = serializers.DateField()
    starts = serializers.ListField(child=serializers.DateTimeField())


class AvailabilitySerializer(serializers.Serializer):
    """API.md: ``{"teacher_id", "product_id", "duration_minutes", "days": [{"date", "starts"}]}``."""

    teacher_id = serializers.IntegerField()
    product_id = serializers.IntegerField()
    duration_minutes = serializers.IntegerField()
    days = AvailabilityDaySerializer(many=True)
