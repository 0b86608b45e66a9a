from django.urls import path

from apps.orders.api import views

urlpatterns = [
    path("orders/confirm", views.OrderConfirmView.as_view(), name="order-confirm"),
    path("orders", views.OrderListCreateView.as_view(), name="order-list"),
    path("orders/<str:order_no>", views.OrderDetailView.as_view(), name="order-detail"),
    path("orders/<str:order_no>/cancel", views.OrderCancelView.as_view(), name="order-cancel"),
    path("orders/<str:order_no>/receive", views.OrderReceiveView.as_view(), name="order-receive"),
]
