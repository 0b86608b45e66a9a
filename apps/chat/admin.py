"""Back office for the chat: customer service reads sessions and messages, never edits them
(ReadOnlyModelAdmin). A staff user linked to a teacher (``Teacher.user``) sees only that
teacher's sessions, messages and notices."""

import datetime as dt

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, F, Q
from django.http import HttpResponseRedirect
from django.utils import timezone

from apps.appointments import availability
from apps.appointments import selectors as booking_selectors
from apps.appointments.models import Slot
from apps.appointments.slots import booking_open_after
from apps.catalog.models import Kind
from apps.catalog.selectors import teacher_for_user
from apps.chat.models import ChatMessage, ChatNotice, ChatSession, Consultation, ConsultationReminder, Side
from apps.orders.reschedule import order_reschedule
from starmall.admin import ReadOnlyModelAdmin, require_perm
from starmall.admin_display import shanghai
from starmall.errors import ShopError

MANAGE = "appointments.manage_slot"


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
    # What customer service reads: whose chat, when the consultation is, how lively, who has not read.
    list_display = [
        "order",
        "customer",
        "teacher",
        "slot_start",
        "last_message_at",
        "message_count",
        "customer_unread",
        "teacher_unread",
    ]
    list_filter = ["teacher"]
    search_fields = ["order__order_no", "customer__nickname", "customer__openid"]
    list_select_related = ["order__slot", "customer", "teacher"]
    inlines = [MessageInline]

    def get_queryset(self, request):
        # Unread: the other side's messages after the id a side last read (ChatSession docstring).
        qs = (
            super()
            .get_queryset(request)
            .annotate(
                message_count=Count("messages"),
                customer_unread=Count(
                    "messages", filter=Q(messages__sender=Side.TEACHER, messages__id__gt=F("customer_last_read_id"))
                ),
                teacher_unread=Count(
                    "messages", filter=Q(messages__sender=Side.CUSTOMER, messages__id__gt=F("teacher_last_read_id"))
                ),
            )
        )
        return _own(request, qs, "teacher")

    @admin.display(description="预约时段", ordering="order__slot__start")
    def slot_start(self, session: ChatSession) -> str:
        return shanghai(session.order.slot.start) if session.order.slot_id else "-"

    @admin.display(description="消息数", ordering="message_count")
    def message_count(self, session: ChatSession) -> int:
        return session.message_count

    @admin.display(description="顾客未读", ordering="customer_unread")
    def customer_unread(self, session: ChatSession) -> int:
        return session.customer_unread

    @admin.display(description="老师未读", ordering="teacher_unread")
    def teacher_unread(self, session: ChatSession) -> int:
        return session.teacher_unread


@admin.register(ChatMessage)
class ChatMessageAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "session", "sender", "content_type", "short_content", "duration", "created_at"]
    list_filter = ["sender", "content_type", "session__teacher"]
    search_fields = ["content", "session__order__order_no"]
    list_select_related = ["session"]

    def get_queryset(self, request):
        return _own(request, super().get_queryset(request), "session__teacher")

    @admin.display(description="内容")
    def short_content(self, message: ChatMessage) -> str:
        return message.content[:60]


@admin.register(ChatNotice)
class ChatNoticeAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "session", "recipient", "period", "status", "attempts", "last_error", "created_at", "sent_at"]
    list_filter = ["status", "recipient"]

    def get_queryset(self, request):
        return _own(request, super().get_queryset(request), "session__teacher")


@admin.register(ConsultationReminder)
class ConsultationReminderAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "order", "hours", "slot_start", "status", "attempts", "last_error", "created_at", "sent_at"]
    list_filter = ["status", "hours"]
    search_fields = ["order__order_no"]

    def get_queryset(self, request):
        return _own(request, super().get_queryset(request), "order__slot__teacher")


class MoveForm(forms.ModelForm):
    """The only field staff fill in: the new slot (the same teacher's, bookable)."""

    new_slot = forms.ModelChoiceField(queryset=Slot.objects.none(), required=True, label="改约到时段")

    class Meta:
        model = Consultation
        fields = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        order = self.instance
        booking = booking_selectors.booking_of(order.order_no) if order.pk else None
        if booking is not None:  # the legacy slots availability lists now (its own booking's start is taken)
            today = timezone.localdate()
            free = booking_selectors.slot_list(
                teacher_id=booking.teacher_id, start=today, end=today + dt.timedelta(days=availability.MAX_DAYS)
            )
            ids = [s.pk for s in free if s.available and s.start > booking_open_after()]
            self.fields["new_slot"].queryset = Slot.objects.filter(pk__in=ids).order_by("start")


@admin.register(Consultation)
class ConsultationAdmin(admin.ModelAdmin):
    """Paid consultations; *change* moves one to another slot through ``order_reschedule`` (the
    API's service and rules), gated by ``appointments.manage_slot``. Nothing else is editable."""

    form = MoveForm
    list_display = ["order_no", "customer", "slot", "status", "paid_at"]
    list_filter = ["status", "slot__teacher"]
    search_fields = ["order_no", "customer__nickname"]
    list_select_related = ["customer", "slot__teacher"]
    readonly_fields = ["order_no", "customer", "slot", "status", "remark"]
    fields = ["order_no", "customer", "slot", "status", "remark", "new_slot"]

    def get_queryset(self, request):
        qs = super().get_queryset(request).filter(kind=Kind.CONSULTATION, slot__isnull=False)
        return _own(request, qs, "slot__teacher")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        return request.user.has_perm("orders.view_order") or request.user.has_perm(MANAGE)

    def has_change_permission(self, request, obj=None):
        return request.user.has_perm(MANAGE)

    def save_model(self, request, obj, form, change):
        require_perm(request, MANAGE)
        try:
            order_reschedule(
                order_no=obj.order_no,
                slot_id=form.cleaned_data["new_slot"].pk,
                actor=f"staff:{request.user.get_username()}",
            )
        except ShopError as exc:
            request._starmall_refused = True
            messages.error(request, f"{obj.order_no}: 未改约：{exc.message}")

    def save_related(self, request, form, formsets, change):
        pass  # nothing related is edited here

    def response_change(self, request, obj):
        if getattr(request, "_starmall_refused", False):
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)
