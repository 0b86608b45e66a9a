from django.core.management.base import BaseCommand, CommandError

from apps.backoffice.volume_seed import refuse_reason, seed


class Command(BaseCommand):
    help = (
        "Add realistic bulk data for the volume benchmark: --customers customers and --orders orders over the "
        "last 365 Shanghai days in every status, with lines, payments, refunds, ledgers, follow-ups, "
        "commissions and consultations booked on the run's own teachers (COPY on PostgreSQL). Each run adds a "
        "new disjoint set (its number is in every key); "
        "refused under production settings."
    )

    def add_arguments(self, parser):
        parser.add_argument("--orders", type=int, default=10_000)
        parser.add_argument("--customers", type=int, default=None, help="default: orders / 5")

    def handle(self, *args, orders: int, customers: int | None, **options):
        reason = refuse_reason()
        if reason:
            raise CommandError(reason)
        customers = customers if customers is not None else max(1, orders // 5)
        if orders < 0 or customers < 1:
            raise CommandError("--orders >= 0 and --customers >= 1")
        seed(orders, customers, out=self.stdout.write)
