from django.urls import path

from apps.wechat_official import views

urlpatterns = [path("wechat/official", views.official_server, name="wechat-official")]
