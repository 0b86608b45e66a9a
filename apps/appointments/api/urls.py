from django.urls import path

from apps.appointments.api import products, views
from starmall.api import converters  # noqa: F401 - registers <order_no:...> and <id:...>

urlpatterns = [
    path("products/<id:product_id>", products.ProductDetailView.as_view(), name="product-detail"),
    path(
        "teachers/<id:teacher_id>/availability",
        views.TeacherAvailabilityView.as_view(),
        name="teacher-availability",
    ),
    path("teachers/<id:teacher_id>/slots", views.TeacherSlotListView.as_view(), name="teacher-slots"),
]
