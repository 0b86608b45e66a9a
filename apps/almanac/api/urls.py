from django.urls import path

from apps.almanac.api import views
from starmall.api import converters  # noqa: F401 - registers <plain:...>

urlpatterns = [
    path("almanac/days/<plain:date>", views.DayView.as_view(), name="almanac-day"),
    path("almanac/months/<plain:month>", views.MonthView.as_view(), name="almanac-month"),
    path("almanac/search", views.SearchView.as_view(), name="almanac-search"),
    path("almanac/activities", views.ActivitiesView.as_view(), name="almanac-activities"),
]
