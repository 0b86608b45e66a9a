"""Back office for the chat: customer service reads sessions and messages, never edits them
(ReadOnlyModelAdmin). A staff user linked to a teacher (``Teacher.user``) sees only that
teacher's sessions, messages and notices."""

from django.contrib import admin
from django.utils import timezone

from apps.catalog.selectors import teacher_for_user
from apps.chat.models import ChatMessage, ChatNotice, ChatSession
from starmall.admin import ReadOnlyModelAdmin


def _own(request, qs, path: str):
    teacher = teacher_for_user(request.user)
    return qs.filter(**{path: teacher}) if teacher is not None else qs


class MessageInline(admin.TabularInline):
    model = ChatMessage
    extra = 0
    fields = ["id", "sender", "content_type", "content", "duration", "created_at"]
    readonly_fields = fields
    ordering = ["id"]
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ChatSession)
class ChatSessionAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "order", "customer", "teacher", "last_message_local", "customer_last_read_id",
                    "teacher_last_read_id"]
    list_filter = ["teacher"]
    search_fields = ["order__order_no", "customer__nickname", "customer__openid"]
    list_select_related = ["order", "customer", "teacher"]
    inlines = [MessageInline]

    def get_queryset(self, request):
        return _own(request, super().get_queryset(request), "teacher")

    @admin.display(description="last message (Shanghai)", ordering="last_message_at")
    def last_message_local(self, session: ChatSession) -> str:
        return f"{timezone.localtime(session.last_message_at):%Y-%m-%d %H:%M}" if session.last_message_at else "—"


@admin.register(ChatMessage)
class ChatMessageAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "session", "sender", "content_type", "short_content", "duration", "created_at"]
    list_filter = ["sender", "content_type", "session__teacher"]
    search_fields = ["content", "session__order__order_no"]
    list_select_related = ["session"]

    def get_queryset(self, request):
        return _own(request, super().get_queryset(request), "session__teacher")

    @admin.display(description="content")
    def short_content(self, message: ChatMessage) -> str:
        return message.content[:60]


@admin.register(ChatNotice)
class ChatNoticeAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "session", "recipient", "period", "status", "attempts", "last_error", "created_at", "sent_at"]
    list_filter = ["status", "recipient"]

    def get_queryset(self, request):
        return _own(request, super().get_queryset(request), "session__teacher")
