from django.urls import path

from apps.files.api import views

urlpatterns = [
    path("uploads", views.UploadView.as_view(), name="uploads"),
]
