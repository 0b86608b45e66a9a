from django.urls import path

from apps.stores.api import views

urlpatterns = [
    path("stores", views.StoreListView.as_view(), name="store-list"),
]
