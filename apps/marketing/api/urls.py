from django.urls import path

from apps.marketing.api import coupons, growth, views
from starmall.api import converters  # noqa: F401 - registers <id:...> and <order_no:...>

urlpatterns = [
    path("flash-sales", views.FlashSaleListView.as_view(), name="flash-sale-list"),
    path("coupons/available", coupons.CouponAvailableView.as_view(), name="coupon-available"),
    path("coupons/receive", coupons.CouponReceiveView.as_view(), name="coupon-receive"),
    path("me/coupons", coupons.MyCouponsView.as_view(), name="me-coupons"),
    path("me/sign-in", coupons.SignInView.as_view(), name="me-sign-in"),
    path("group-buys", growth.GroupBuyListView.as_view(), name="group-buy-list"),
    path("group-buys/<id:group_buy_id>/groups", growth.GroupBuyGroupsView.as_view(), name="group-buy-groups"),
    path("groups/<id:group_id>", growth.GroupDetailView.as_view(), name="group-detail"),
    path("bargains", growth.BargainListView.as_view(), name="bargain-list"),
    path("bargains/<id:bargain_id>/start", growth.BargainStartView.as_view(), name="bargain-start"),
    path("bargain-records/<order_no:bargain_no>", growth.BargainRecordView.as_view(), name="bargain-record"),
    path("bargain-records/<order_no:bargain_no>/help", growth.BargainHelpView.as_view(), name="bargain-help"),
]
