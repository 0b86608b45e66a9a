from django.urls import path

from apps.marketing.api import views

urlpatterns = [
    path("flash-sales", views.FlashSaleListView.as_view(), name="flash-sale-list"),
]
