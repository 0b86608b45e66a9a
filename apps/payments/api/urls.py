from django.urls import path

from apps.payments.api import aftersales, cancel, member_cards, recharges, views
from starmall.api import converters  # noqa: F401 - registers <order_no:...> and <id:...>

urlpatterns = [
    path("orders/<order_no:order_no>/cancel", cancel.OrderCancelView.as_view(), name="order-cancel"),
    path("orders/<order_no:order_no>/pay", views.OrderPayView.as_view(), name="order-pay"),
    path("orders/<order_no:order_no>/pay-status", views.OrderPayStatusView.as_view(), name="order-pay-status"),
    path("orders/<order_no:order_no>/refund", views.OrderRefundView.as_view(), name="order-refund"),
    path("refunds", aftersales.RefundListView.as_view(), name="refund-list"),
    path("refunds/<order_no:refund_no>/return", aftersales.RefundReturnView.as_view(), name="refund-return"),
    path("recharge/packages", recharges.PackageListView.as_view(), name="recharge-packages"),
    path("recharges", recharges.RechargeCreateView.as_view(), name="recharge-create"),
    path("recharges/<plain:recharge_no>", recharges.RechargeDetailView.as_view(), name="recharge-detail"),
    path("member-cards/<id:card_id>/buy", member_cards.MemberCardBuyView.as_view(), name="member-card-buy"),
    path("payments/wechat/notify", views.wechat_notify, name="wechat-notify"),
    path("payments/wechat/refund-notify", views.wechat_refund_notify, name="wechat-refund-notify"),
    path("payments/wechat/v3/notify", views.wechat_v3_notify, name="wechat-v3-notify"),
    path("payments/wechat/v3/refund-notify", views.wechat_v3_refund_notify, name="wechat-v3-refund-notify"),
]
