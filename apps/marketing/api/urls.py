from django.urls import path

from apps.marketing.api import coupons, views

urlpatterns = [
    path("flash-sales", views.FlashSaleListView.as_view(), name="flash-sale-list"),
    path("coupons/available", coupons.CouponAvailableView.as_view(), name="coupon-available"),
    path("coupons/receive", coupons.CouponReceiveView.as_view(), name="coupon-receive"),
    path("me/coupons", coupons.MyCouponsView.as_view(), name="me-coupons"),
    path("me/sign-in", coupons.SignInView.as_view(), name="me-sign-in"),
]
