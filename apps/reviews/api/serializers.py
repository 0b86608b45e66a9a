from django.utils import timezone
from rest_framework import serializers

from apps.reviews.models import Review
from starmall.api import fields
from starmall.api.schema import MAX_ID


class ReviewInSerializer(serializers.Serializer):
    line_id = fields.IntegerField(min_value=1, max_value=MAX_ID)
    rating = fields.IntegerField(min_value=1, max_value=5)
    text = fields.CharField(max_length=500, allow_blank=True, required=False, default="")
    images = serializers.ListField(
        child=fields.CharField(max_length=500),
        max_length=Review.MAX_IMAGES,
        required=False,
        default=list,
        help_text="URLs answered by POST /uploads",
    )


class ReviewSerializer(fields.ModelSerializer):
    nickname = serializers.SerializerMethodField()
    created_at = serializers.SerializerMethodField()
    reply = serializers.SerializerMethodField()
    images = serializers.ListField(child=fields.CharField())

    class Meta:
        model = Review
        fields = ["id", "rating", "text", "images", "nickname", "created_at", "reply", "line_id", "product_id"]

    def get_nickname(self, review) -> str:
        name = review.customer.nickname or "微信用户"
        return name if len(name) <= 1 else name[0] + "*" * min(len(name) - 1, 3)

    def get_created_at(self, review) -> str:
        return timezone.localtime(review.created_at).isoformat()

    def get_reply(self, review) -> str | None:
        return review.reply or None
