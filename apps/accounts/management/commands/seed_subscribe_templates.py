from django.conf import settings
from django.core.management.base import BaseCommand

from apps.accounts import subscriptions
from apps.accounts.models import SubscribeTemplate


class Command(BaseCommand):
    help = (
        "Demo subscription templates for both scenes (order: paid, shipped; consultation: reminder, "
        "chat message) with their default fields maps and the ids of WECHAT_SUBSCRIBE_TEMPLATE_* "
        "(API.md: demo data takes them from there when set); kinds that have a row are left as staff "
        "set them."
    )

    def handle(self, *args, **options):
        created = 0
        for kind, (scene, setting, fields) in subscriptions.DEFAULTS.items():
            _, made = SubscribeTemplate.objects.get_or_create(
                kind=kind, defaults={"scene": scene, "template_id": getattr(settings, setting), "fields": fields}
            )
            created += made
        self.stdout.write(f"demo data: {created} subscription templates added")
