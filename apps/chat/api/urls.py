from django.urls import path

from apps.chat.api import attendance, consultations, views
from starmall.api import converters  # noqa: F401 - registers <id:...>

urlpatterns = [
    path("chat/sessions", views.SessionListView.as_view(), name="chat-sessions"),
    path("chat/sessions/<id:session_id>/messages", views.MessageListCreateView.as_view(), name="chat-messages"),
    path("chat/sessions/<id:session_id>/read", views.SessionReadView.as_view(), name="chat-read"),
    path("teacher/schedule", consultations.TeacherScheduleView.as_view(), name="teacher-schedule"),
    path(
        "teacher/bookings/<order_no:order_no>/attendance",
        attendance.TeacherAttendanceView.as_view(),
        name="teacher-booking-attendance",
    ),
    path("teacher/ics-token", consultations.TeacherIcsTokenView.as_view(), name="teacher-ics-token"),
    path("consultations", consultations.ConsultationListView.as_view(), name="consultations"),
    path("teachers/<id:teacher_id>", consultations.TeacherCardView.as_view(), name="teacher-card"),
]
