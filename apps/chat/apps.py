from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "apps.chat"
    label = "chat"
    verbose_name = "咨询聊天"

    def ready(self) -> None:
        # The paying transaction records a ``chat_open`` follow-up (orders knows no chat: apps
        # import only downward); its handler lives here and is registered with the outbox.
        from apps.chat import services
        from apps.orders import followups

        followups.HANDLERS[followups.FollowUp.Kind.CHAT_OPEN] = services.followup_chat_open
