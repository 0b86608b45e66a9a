from rest_framework import serializers

from apps.chat import frames
from apps.chat.models import ChatMessage, ChatSession, ContentType, Side
from apps.chat.services import session_is_closed
from starmall.api import fields
from starmall.api.schema import MAX_ID


class MessageSerializer(fields.ModelSerializer):
    """API.md: ``{"id", "sender", "content_type", "content", "duration", "created_at"}`` (+ session_id)."""

    class Meta:
        model = ChatMessage
        fields = list(frames.MESSAGE_FIELDS)

    def to_representation(self, instance):
        return frames.message_data(instance)


class MessageInSerializer(serializers.Serializer):
    """The shape only; the rules (length, our URLs, duration) are the service's, as on the socket."""

    content_type = fields.ChoiceField(choices=ContentType.choices, help_text="1 text, 2 voice, 3 image")
    content = fields.CharField(
        max_length=2000, trim_whitespace=False, help_text="text (<= 1000 chars) or our uploaded file's URL"
    )
    duration = fields.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=60,
        help_text="seconds, voice only (1..60); ignored: the duration is read from the uploaded file",
    )


class MessageQuerySerializer(serializers.Serializer):
    before = fields.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="only messages with a smaller id (older history)"
    )


class ReadInSerializer(serializers.Serializer):
    up_to = fields.IntegerField(min_value=1, max_value=MAX_ID, help_text="id of the newest message read")


class PartySerializer(serializers.Serializer):
    id = fields.IntegerField()
    name = fields.CharField()


class SessionSerializer(fields.ModelSerializer):
    """API.md: ``{"id", "teacher", "customer", "order_no", "last_message", "unread"}`` and
    ``side`` (the caller's: ``customer`` or ``teacher``). ``unread`` counts the other side's
    messages after the caller's read mark. ``closed``: the consultation was cancelled or refunded,
    sending is refused (409 ``invalid_state``), the history stays readable."""

    teacher = serializers.SerializerMethodField()
    customer = serializers.SerializerMethodField()
    order_no = fields.CharField(source="order.order_no")
    last_message = serializers.SerializerMethodField()
    unread = serializers.SerializerMethodField()
    side = serializers.SerializerMethodField()
    closed = serializers.SerializerMethodField()

    class Meta:
        model = ChatSession
        fields = [
            "id",
            "teacher",
            "customer",
            "order_no",
            "last_message",
            "unread",
            "side",
            "last_message_at",
            "closed",
        ]

    def _side(self, obj) -> str:
        return Side.CUSTOMER if obj.customer_id == self.context["customer_id"] else Side.TEACHER

    def get_side(self, obj) -> str:
        return self._side(obj)

    def get_closed(self, obj) -> bool:
        return session_is_closed(obj)

    def get_teacher(self, obj) -> dict:
        return {"id": obj.teacher_id, "name": obj.teacher.name, "title": obj.teacher.title}

    def get_customer(self, obj) -> dict:
        return {"id": obj.customer_id, "nickname": obj.customer.nickname, "avatar_url": obj.customer.avatar_url}

    def get_last_message(self, obj) -> dict | None:
        message = self.context.get("last_messages", {}).get(getattr(obj, "last_message_id", None))
        return MessageSerializer(message).data if message else None

    def get_unread(self, obj) -> int:
        return obj.unread_as_customer if self._side(obj) == Side.CUSTOMER else obj.unread_as_teacher
