"""WebSocket routes (``starmall/asgi.py``): ``/ws/chat/{session_id}?token=``."""

from django.urls import re_path

from apps.chat.consumers import ChatConsumer

websocket_urlpatterns = [
    re_path(r"^ws/chat/(?P<session_id>[1-9][0-9]{0,15})/?$", ChatConsumer.as_asgi()),
]
