from django.urls import path

from apps.members.api import views

urlpatterns = [
    path("me/member", views.MemberView.as_view(), name="me-member"),
    path("me/growth", views.GrowthListView.as_view(), name="me-growth"),
    path("member-cards", views.MemberCardListView.as_view(), name="member-card-list"),
]
