from django.urls import path

from apps.accounts.api import views, wallet

urlpatterns = [
    path("auth/wechat/login", views.LoginView.as_view(), name="auth-login"),
    path("auth/logout", views.LogoutView.as_view(), name="auth-logout"),
    path("me", views.MeView.as_view(), name="me"),
    path("addresses", views.AddressListView.as_view(), name="address-list"),
    path("me/points", wallet.PointsLedgerView.as_view(), name="me-points"),
    path("me/balance", wallet.BalanceLedgerView.as_view(), name="me-balance"),
]
