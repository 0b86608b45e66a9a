from django.urls import path

from apps.catalog.api import views
from starmall.api import converters  # noqa: F401 - registers <order_no:...> and <id:...>

urlpatterns = [
    path("categories", views.CategoryListView.as_view(), name="category-list"),
    path("products", views.ProductListView.as_view(), name="product-list"),
    path("teachers", views.TeacherListView.as_view(), name="teacher-list"),
]
