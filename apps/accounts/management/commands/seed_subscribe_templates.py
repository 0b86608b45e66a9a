from django.core.management.base import BaseCommand

from apps.accounts import subscriptions
from apps.accounts.models import SubscribeTemplate

#: kind -> the demo template id (the sandbox accepts any non-empty id)
DEMO_IDS = {
    SubscribeTemplate.Kind.ORDER_PAID: "order-paid",
    SubscribeTemplate.Kind.ORDER_SHIPPED: "order-shipped",
    SubscribeTemplate.Kind.CONSULTATION_REMINDER: "consultation-reminder",
    SubscribeTemplate.Kind.CHAT_MESSAGE: "chat-message",
}


class Command(BaseCommand):
    help = (
        "Demo subscription templates for both scenes (order: paid, shipped; consultation: reminder, "
        "chat message) with their default fields maps; kinds that have a row are left as staff set them."
    )

    def handle(self, *args, **options):
        created = 0
        for kind, template_id in DEMO_IDS.items():
            scene, _, fields = subscriptions.DEFAULTS[kind]
            _, made = SubscribeTemplate.objects.get_or_create(
                kind=kind, defaults={"scene": scene, "template_id": template_id, "fields": fields}
            )
            created += made
        self.stdout.write(f"demo data: {created} subscription templates added")
