from django.urls import path

from apps.appointments.api import views

urlpatterns = [
    path("teachers/<int:teacher_id>/slots", views.TeacherSlotListView.as_view(), name="teacher-slots"),
]
