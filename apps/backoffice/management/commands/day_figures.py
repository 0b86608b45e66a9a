import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from apps.backoffice import day_figures


class Command(BaseCommand):
    help = (
        "Sum the dashboard's daily figures again for every closed Shanghai day from --since (default: the "
        "first order's or customer's day) to yesterday, and store them (safe to run at any time)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--since", default=None, help="YYYY-MM-DD (Shanghai date)")

    def handle(self, *args, since: str | None, **options):
        try:
            first = dt.date.fromisoformat(since) if since else None
        except ValueError as exc:
            raise CommandError("--since 的格式应为 YYYY-MM-DD。") from exc
        days = day_figures.days_refresh_all(first)
        self.stdout.write(f"{days} days stored")
