from django.urls import path

from apps.appointments.api import calendar, products, views, waitlist
from starmall.api import converters  # noqa: F401 - registers <order_no:...> and <id:...>

urlpatterns = [
    path("products/<id:product_id>", products.ProductDetailView.as_view(), name="product-detail"),
    path(
        "teachers/<id:teacher_id>/availability",
        views.TeacherAvailabilityView.as_view(),
        name="teacher-availability",
    ),
    path("teachers/<id:teacher_id>/slots", views.TeacherSlotListView.as_view(), name="teacher-slots"),
    path("teachers/<id:teacher_id>/waitlist", waitlist.TeacherWaitlistView.as_view(), name="teacher-waitlist"),
    path("me/waitlist", waitlist.MyWaitlistView.as_view(), name="my-waitlist"),
    path("me/waitlist/<id:entry_id>", waitlist.MyWaitlistEntryView.as_view(), name="my-waitlist-entry"),
    path("orders/<order_no:order_no>/calendar.ics", calendar.OrderCalendarView.as_view(), name="order-calendar"),
    path("calendars/<plain:token>.ics", calendar.TeacherFeedView.as_view(), name="teacher-calendar-feed"),
]
