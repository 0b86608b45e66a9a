from django.core.management.base import BaseCommand

from apps.printing.models import Printer

DEMO_SN = "SANDBOX-58MM-001"


class Command(BaseCommand):
    help = (
        "Demo receipt printer: a sandbox printer (prints to the sandbox: GET /sandbox/printer) that "
        "prints every paid order's ticket (idempotent: made once, never changed after)."
    )

    def handle(self, *args, **options):
        printer, created = Printer.objects.get_or_create(
            provider=Printer.Provider.SANDBOX,
            sn=DEMO_SN,
            defaults={"name": "前台小票机（沙箱）", "key": "sandbox", "copies": 1, "print_on_payment": True},
        )
        self.stdout.write(f"demo printer: {printer}{' (made)' if created else ''}")
