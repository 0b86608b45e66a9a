"""The teacher's side: schedule API, blocking slots and days off (service and admin, own data
only), the consultations list and the teacher card."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.appointments import slots
from apps.appointments.models import DayOff, Slot
from apps.catalog.models import Teacher
from apps.chat.models import ChatMessage, ChatSession
from starmall.errors import InvalidState

pytestmark = pytest.mark.django_db


def test_teacher_schedule_shows_bookings_with_nickname_and_remark(chat, make_api, consultation):
    slot = consultation.slots[0]
    day = timezone.localtime(slot.start).date()
    response = make_api(chat.teacher_customer).get("/api/v1/teacher/schedule", {"from": day, "to": day})
    assert response.status_code == 200
    body = response.json()
    assert body["teacher"]["id"] == consultation.teacher.pk
    booked = [s for s in body["slots"] if s["id"] == slot.pk][0]
    assert (booked["booked"], len(booked["bookings"])) == (1, 1)
    booking = booked["bookings"][0]
    assert booking["order_no"] == chat.order["order_no"] and booking["status"] == "paid"
    assert booking["customer"] == {"id": chat.customer.pk, "nickname": chat.customer.nickname}
    assert booking["chat_session_id"] == chat.session.pk
    assert all(s["bookings"] == [] for s in body["slots"] if s["id"] != slot.pk)


def test_teacher_schedule_is_403_for_non_teachers(chat, make_api):
    response = make_api(chat.customer).get("/api/v1/teacher/schedule")
    assert response.status_code == 403 and response.json()["code"] == "forbidden"
    assert make_api().get("/api/v1/teacher/schedule").status_code == 401


def test_slot_block_refuses_a_booked_slot(chat, consultation):
    booked, free = consultation.slots[0], consultation.slots[1]
    with pytest.raises(InvalidState) as refused:
        slots.slot_block(slot_id=booked.pk, blocked=True)
    assert "预约" in refused.value.message
    assert Slot.objects.get(pk=booked.pk).is_open is True
    assert slots.slot_block(slot_id=free.pk, blocked=True).is_open is False
    assert slots.slot_block(slot_id=free.pk, blocked=False).is_open is True


def test_day_block_closes_free_slots_reports_booked_and_survives_generation(chat, consultation):
    booked = consultation.slots[0]
    day = timezone.localtime(booked.start).date()
    result = slots.day_block(teacher_id=consultation.teacher.pk, date=day, blocked=True)
    same_day = Slot.objects.filter(teacher=consultation.teacher, start__date=day)
    assert [slot_id for slot_id, _ in result.refused] == [booked.pk]
    assert sorted(result.changed) == sorted(same_day.exclude(pk=booked.pk).values_list("pk", flat=True))
    assert list(same_day.filter(is_open=True).values_list("pk", flat=True)) == [booked.pk]
    # a later day off: generated slots come out closed
    later = timezone.localdate() + dt.timedelta(days=7)
    Slot.objects.filter(teacher=consultation.teacher, start__date=later).delete()
    slots.day_block(teacher_id=consultation.teacher.pk, date=later, blocked=True)
    slots.slots_generate()
    generated = Slot.objects.filter(teacher=consultation.teacher, start__date=later)
    assert generated.count() == 6 and not generated.filter(is_open=True).exists()
    slots.day_block(teacher_id=consultation.teacher.pk, date=later, blocked=False)
    assert generated.filter(is_open=True).count() == 6
    assert not DayOff.objects.filter(date=later).exists()


@pytest.fixture
def teacher_staff(django_user_model, consultation):
    """A staff user linked to the consultation's teacher, with appointments.manage_slot and the
    chat's view permissions (the teacher role)."""
    user = django_user_model.objects.create_user("teacher1", password="pw-123456", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label__in=["appointments", "chat"],
            codename__in=[
                "manage_slot",
                "view_slot",
                "view_dayoff",
                "add_dayoff",
                "view_chatsession",
                "view_chatmessage",
            ],
        )
    )
    Teacher.objects.filter(pk=consultation.teacher.pk).update(user=user)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def other_teacher():
    from apps.appointments.slots import slots_generate

    teacher = Teacher.objects.create(name="王老师", title="讲师")
    slots_generate()
    return teacher


def test_admin_teacher_sees_only_own_slots_and_chats(teacher_staff, other_teacher, chat, consultation):
    listing = teacher_staff.get(reverse("admin:appointments_slot_changelist"))
    assert listing.status_code == 200
    shown = {s.teacher_id for s in listing.context["cl"].result_list}
    assert shown == {consultation.teacher.pk}
    foreign = Slot.objects.filter(teacher=other_teacher).first()
    assert teacher_staff.get(reverse("admin:appointments_slot_change", args=[foreign.pk])).status_code == 302
    sessions = teacher_staff.get(reverse("admin:chat_chatsession_changelist"))
    assert [s.pk for s in sessions.context["cl"].result_list] == [chat.session.pk]
    page = teacher_staff.get(reverse("admin:chat_chatsession_change", args=[chat.session.pk]))
    assert page.status_code == 200 and b'name="_save"' not in page.content  # readable, not editable


def test_admin_teacher_blocks_with_per_slot_outcome(teacher_staff, other_teacher, chat, consultation):
    booked, free = consultation.slots[0], consultation.slots[1]
    foreign = Slot.objects.filter(teacher=other_teacher).first()
    response = teacher_staff.post(
        reverse("admin:appointments_slot_changelist"),
        {"action": "block_slots", "_selected_action": [booked.pk, free.pk, foreign.pk]},
        follow=True,
    )
    texts = [str(m) for m in response.context["messages"]]
    assert any("不能停约" in t for t in texts) and any("已停约" in t for t in texts)
    assert Slot.objects.get(pk=booked.pk).is_open is True
    assert Slot.objects.get(pk=free.pk).is_open is False
    assert Slot.objects.get(pk=foreign.pk).is_open is True  # not theirs: untouched


def test_chat_admin_is_read_only_for_staff(chat, django_user_model, make_api):
    make_api(chat.customer).post(
        f"/api/v1/chat/sessions/{chat.session.pk}/messages", {"content_type": 1, "content": "你好"}, format="json"
    )
    django_user_model.objects.create_superuser("cs", password="pw-123456")
    client = Client()
    client.login(username="cs", password="pw-123456")
    message = ChatMessage.objects.get()
    page = client.get(reverse("admin:chat_chatmessage_change", args=[message.pk]))
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert client.post(reverse("admin:chat_chatmessage_delete", args=[message.pk]), {"post": "yes"}).status_code == 403
    assert ChatMessage.objects.count() == 1 and ChatSession.objects.count() == 1


def test_consultations_list_upcoming_and_past(chat, make_api):
    api = make_api(chat.customer)
    upcoming = api.get("/api/v1/consultations", {"status": "upcoming"}).json()
    assert upcoming["count"] == 1
    row = upcoming["results"][0]
    assert (row["order_no"], row["status"], row["chat_session_id"]) == (chat.order["order_no"], "paid", chat.session.pk)
    assert row["teacher"]["name"] == "李明远" and row["slot"]["id"] == chat.order["slot"]["id"]
    assert api.get("/api/v1/consultations", {"status": "past"}).json()["count"] == 0
    assert api.get("/api/v1/consultations", {"status": "soon"}).status_code == 400


def test_teacher_card_is_public(consultation, make_api):
    Teacher.objects.filter(pk=consultation.teacher.pk).update(
        bio="二十年易学研究", photo_url="https://cdn.example.com/t.jpg", specialties=["八字", "择日"]
    )
    response = make_api().get(f"/api/v1/teachers/{consultation.teacher.pk}")
    assert response.status_code == 200
    card = response.json()
    assert (card["name"], card["bio"], card["specialties"], card["product_id"]) == (
        "李明远",
        "二十年易学研究",
        ["八字", "择日"],
        consultation.product.pk,
    )
    assert card["rating"] is None  # no consultation reviews (yet)
    assert len(card["next_slots"]) == 5 and all(s["available"] for s in card["next_slots"])
    assert make_api().get("/api/v1/teachers/999999").status_code == 404
