"""Shapes of the members API (API.md "Members (会员)")."""

from django.utils import timezone
from rest_framework import serializers

from apps.members.models import MemberCard
from starmall.api import fields


class LevelBriefSerializer(serializers.Serializer):
    id = fields.IntegerField()
    name = fields.CharField()
    discount_percent = fields.IntegerField(help_text="95 = 5 % off goods at their own price; 100 = none")


class NextLevelSerializer(serializers.Serializer):
    name = fields.CharField()
    growth_min = fields.IntegerField(help_text="growth needed to reach it")


class SvipSerializer(serializers.Serializer):
    expires_at = serializers.DateTimeField(help_text="ISO 8601, +08:00: the paid membership ends then")


class MemberSerializer(serializers.Serializer):
    level = LevelBriefSerializer(allow_null=True, help_text="the highest level the growth reaches; null without levels")
    growth = fields.IntegerField()
    next_level = NextLevelSerializer(allow_null=True, help_text="the next level up, or null at the top")
    svip = SvipSerializer(allow_null=True, help_text="the running paid membership, or null")


class GrowthEntrySerializer(serializers.Serializer):
    change = fields.IntegerField(help_text="growth; + an order completed, - a refund took back its share")
    reason = fields.CharField(help_text="code: order_completed, order_refunded, adjust")
    order_no = fields.CharField(allow_blank=True)
    created_at = serializers.SerializerMethodField()

    def get_created_at(self, entry) -> str:
        return timezone.localtime(entry.created_at).isoformat()


class MemberCardSerializer(fields.ModelSerializer):
    class Meta:
        model = MemberCard
        fields = ["id", "name", "days", "pay_fen", "original_fen"]
