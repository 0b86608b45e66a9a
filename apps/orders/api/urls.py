from django.urls import path

from apps.orders.api import cart, views
from apps.orders.api.reschedule import OrderRescheduleView
from starmall.api import converters  # noqa: F401 - registers <order_no:...> and <id:...>

urlpatterns = [
    path("orders/confirm", views.OrderConfirmView.as_view(), name="order-confirm"),
    path("orders", views.OrderListCreateView.as_view(), name="order-list"),
    path("orders/counts", views.OrderCountsView.as_view(), name="order-counts"),  # before <order_no>
    path("orders/<order_no:order_no>", views.OrderDetailView.as_view(), name="order-detail"),
    path("orders/<order_no:order_no>/receive", views.OrderReceiveView.as_view(), name="order-receive"),
    path("orders/<order_no:order_no>/tracking", views.OrderTrackingView.as_view(), name="order-tracking"),
    path("orders/<order_no:order_no>/reorder", views.OrderReorderView.as_view(), name="order-reorder"),
    path("cart", cart.CartView.as_view(), name="cart"),
    path("cart/items", cart.CartItemAddView.as_view(), name="cart-item-add"),
    path("cart/items/<id:item_id>", cart.CartItemView.as_view(), name="cart-item"),
    path("orders/<order_no:order_no>/reschedule", OrderRescheduleView.as_view(), name="order-reschedule"),
]
