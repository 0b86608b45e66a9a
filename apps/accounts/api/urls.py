from django.urls import path

from apps.accounts.api import messages, views, wallet
from starmall.api import converters  # noqa: F401 - registers <id:...>

urlpatterns = [
    path("auth/wechat/login", views.LoginView.as_view(), name="auth-login"),
    path("auth/logout", views.LogoutView.as_view(), name="auth-logout"),
    path("me", views.MeView.as_view(), name="me"),
    path("addresses", views.AddressListView.as_view(), name="address-list"),
    path("addresses/<id:address_id>", views.AddressDetailView.as_view(), name="address-detail"),
    path("me/points", wallet.PointsLedgerView.as_view(), name="me-points"),
    path("me/balance", wallet.BalanceLedgerView.as_view(), name="me-balance"),
    path("me/phone", messages.MePhoneView.as_view(), name="me-phone"),
    path("sms/codes", messages.SmsCodeView.as_view(), name="sms-codes"),
    path("subscribe-templates", messages.SubscribeTemplateListView.as_view(), name="subscribe-templates"),
]
