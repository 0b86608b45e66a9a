"""``manage.py reconcile [--date YYYY-MM-DD]``: compare one day's WeChat bill with our rows.

    python manage.py reconcile                     # yesterday (Beijing), as the daily beat task
    python manage.py reconcile --date 2026-11-29   # any Beijing date; replaces that day's result

Stores the day's ReconciliationRun (seen in the admin) and prints one line ending in
``N differences``; each difference goes to stderr, one line each. Exit status 1 when the bill
could not be fetched or read; differences exit 0.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.payments import reconciliation
from apps.payments.models import ReconciliationRun
from starmall.management.arguments import iso_date


class Command(BaseCommand):
    help = "Reconcile a day's WeChat Pay bill with our payments and refunds (default: yesterday, Beijing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--date", help="the bill's Beijing date, YYYY-MM-DD (default: yesterday)")

    def handle(self, *args, **opts) -> None:
        bill_date = iso_date(opts["date"]) if opts["date"] else reconciliation.previous_day()
        run = reconciliation.reconcile(bill_date=bill_date)
        if run.status == ReconciliationRun.Status.ERROR:
            raise CommandError(f"{bill_date}: could not reconcile: {run.error}")
        self.stdout.write(
            f"{bill_date}: {run.status}; WeChat {run.wechat_count} lines {run.wechat_fen} fen, "
            f"local {run.local_count} rows {run.local_fen} fen, {len(run.differences)} differences"
        )
        for d in run.differences:
            self.stderr.write(
                f"  {d['kind']:<14} {d['out_trade_no']} {d['out_refund_no'] or '-'} "
                f"WeChat {d['wechat_fen'] if d['wechat_fen'] is not None else '-'} fen {d['wechat_status'] or '-'} / "
                f"local {d['local_fen'] if d['local_fen'] is not None else '-'} fen {d['local_status'] or '-'}"
            )
