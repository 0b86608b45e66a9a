from django.urls import path

from apps.distribution.api import views

urlpatterns = [
    path("me/referrer", views.ReferrerView.as_view(), name="me-referrer"),
    path("me/distribution", views.DistributionView.as_view(), name="me-distribution"),
    path("me/commissions", views.CommissionListView.as_view(), name="me-commissions"),
    path("me/team", views.TeamView.as_view(), name="me-team"),
    path("me/codes", views.CodeView.as_view(), name="me-codes"),
    path("withdrawals", views.WithdrawalListView.as_view(), name="withdrawal-list"),
    path("payments/wechat/transfer-notify", views.transfer_notify, name="wechat-transfer-notify"),
]
