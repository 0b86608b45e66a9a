from django.urls import path

from apps.orders.api import views
from apps.orders.api.reschedule import OrderRescheduleView
from starmall.api import converters  # noqa: F401 - registers <order_no:...> and <id:...>

urlpatterns = [
    path("orders/confirm", views.OrderConfirmView.as_view(), name="order-confirm"),
    path("orders", views.OrderListCreateView.as_view(), name="order-list"),
    path("orders/<order_no:order_no>", views.OrderDetailView.as_view(), name="order-detail"),
    path("orders/<order_no:order_no>/cancel", views.OrderCancelView.as_view(), name="order-cancel"),
    path("orders/<order_no:order_no>/receive", views.OrderReceiveView.as_view(), name="order-receive"),
    path("orders/<order_no:order_no>/reschedule", OrderRescheduleView.as_view(), name="order-reschedule"),
]
