from django.urls import path

from apps.points_mall.api import views
from starmall.api import converters  # noqa: F401 - registers <id:...>

urlpatterns = [
    path("points-mall", views.ItemListView.as_view(), name="points-mall-list"),
    path("points-mall/<id:item_id>/exchange", views.ExchangeView.as_view(), name="points-mall-exchange"),
]
