from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.chat import selectors, services
from apps.chat.api.serializers import (
    MessageInSerializer,
    MessageQuerySerializer,
    MessageSerializer,
    ReadInSerializer,
    SessionSerializer,
)
from starmall.api.schema import errors


class SessionListView(ListAPIView):
    """The caller's chat sessions (as customer, and as teacher when linked to one)."""

    serializer_class = SessionSerializer

    def get_queryset(self):
        return selectors.session_list(customer_id=self.request.user.pk)

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "customer_id": getattr(self.request.user, "pk", None)}

    def get_serializer(self, *args, **kwargs):
        if args and not isinstance(args[0], SessionSerializer.Meta.model):
            rows = list(args[0])
            kwargs.setdefault("context", self.get_serializer_context())
            kwargs["context"]["last_messages"] = selectors.messages_by_id([r.last_message_id for r in rows])
            args = (rows, *args[1:])
        return super().get_serializer(*args, **kwargs)


class MessageListCreateView(ListAPIView):
    """History newest first (``?before=`` for older), and sending over HTTP (same rules as the socket)."""

    serializer_class = MessageSerializer

    @extend_schema(
        parameters=[MessageQuerySerializer],
        responses={
            200: MessageSerializer(many=True),
            **errors(e403="forbidden (someone else's session)", e404="not_found"),
        },
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = MessageQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        services.participant(session_id=self.kwargs["session_id"], customer_id=self.request.user.pk)
        return selectors.message_list(session_id=self.kwargs["session_id"], before=query.validated_data.get("before"))

    @extend_schema(
        request=MessageInSerializer,
        responses={
            201: MessageSerializer,
            **errors(
                e400="invalid (detail.content: not the sender's own upload of the message's kind)",
                e403="forbidden (someone else's session)",
                e404="not_found",
                e409="invalid_state (the consultation was cancelled or refunded: the chat is closed)",
                e429="throttled (CHAT_MESSAGES_PER_MINUTE)",
            ),
        },
    )
    def post(self, request, session_id: int):
        data = MessageInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        message = services.message_send(session_id=session_id, customer_id=request.user.pk, **data.validated_data)
        return Response(MessageSerializer(message).data, status=status.HTTP_201_CREATED)


class SessionReadView(APIView):
    @extend_schema(
        request=ReadInSerializer,
        responses={204: None, **errors(e400="invalid", e403="forbidden (someone else's session)", e404="not_found")},
    )
    def post(self, request, session_id: int):
        data = ReadInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.messages_mark_read(session_id=session_id, customer_id=request.user.pk, **data.validated_data)
        return Response(status=status.HTTP_204_NO_CONTENT)
