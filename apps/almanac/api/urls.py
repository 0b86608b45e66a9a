from django.urls import path

from apps.almanac.api import views

urlpatterns = [
    path("almanac/days/<str:date>", views.DayView.as_view(), name="almanac-day"),
    path("almanac/months/<str:month>", views.MonthView.as_view(), name="almanac-month"),
    path("almanac/search", views.SearchView.as_view(), name="almanac-search"),
    path("almanac/activities", views.ActivitiesView.as_view(), name="almanac-activities"),
]
