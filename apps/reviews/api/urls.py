from django.urls import path

from apps.reviews.api import views
from starmall.api import converters  # noqa: F401 - registers <order_no:...> and <id:...>

urlpatterns = [
    path("orders/<order_no:order_no>/reviews", views.OrderReviewView.as_view(), name="order-reviews"),
    path("products/<id:product_id>/reviews", views.ProductReviewListView.as_view(), name="product-reviews"),
]
