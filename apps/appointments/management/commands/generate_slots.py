from django.core.management.base import BaseCommand

from apps.appointments.slots import slots_generate


class Command(BaseCommand):
    help = "Make sure every active teacher has slots for the next N days (safe to rerun)."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=None, help="days ahead (default SLOT_DAYS_AHEAD=8)")

    def handle(self, *args, days=None, **options):
        result = slots_generate(days=days)
        self.stdout.write(f"slots: {result.created} created, {result.removed} past free slots removed")
