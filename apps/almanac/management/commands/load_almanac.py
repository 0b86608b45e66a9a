"""``manage.py load_almanac``: fill the almanac from lunar-python (README "Loading").

    python manage.py load_almanac                                # 1901-01-01..2100-12-31
    python manage.py load_almanac --years-back 1 --years-ahead 3  # whole years around today
    python manage.py load_almanac --start 2025-01-01 --end 2028-12-31 [--force]

Safe to rerun: years already loaded with the pinned lunar-python version and sect are skipped
(a rerun of a loaded window takes well under a second), ``--force`` rewrites them. Refuses to
run when the installed lunar-python is not the pinned version.
"""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from tqdm import tqdm

from apps.almanac import compute, services
from starmall.management.arguments import iso_date


class Command(BaseCommand):
    help = "Load the almanac (黄历) from lunar-python for a date range; safe to rerun."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--start", help=f"first date, YYYY-MM-DD (default {compute.FIRST_DATE})")
        parser.add_argument("--end", help=f"last date, YYYY-MM-DD (default {compute.LAST_DATE})")
        parser.add_argument(
            "--years-back",
            type=int,
            help="instead of --start: 1 January of (this year - N), Shanghai time",
        )
        parser.add_argument(
            "--years-ahead",
            type=int,
            help="instead of --end: 31 December of (this year + N), Shanghai time",
        )
        parser.add_argument("--force", action="store_true", help="rewrite years already loaded")
        parser.add_argument("--workers", type=int, help="processes computing days (default: CPUs, max 4)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, **opts) -> None:
        today = timezone.localdate()
        if opts["start"] and opts["years_back"] is not None:
            raise CommandError("give --start or --years-back, not both")
        if opts["end"] and opts["years_ahead"] is not None:
            raise CommandError("give --end or --years-ahead, not both")
        start, end = compute.FIRST_DATE, compute.LAST_DATE
        if opts["start"]:
            start = iso_date(opts["start"])
        elif opts["years_back"] is not None:
            start = max(dt.date(today.year - opts["years_back"], 1, 1), compute.FIRST_DATE)
        if opts["end"]:
            end = iso_date(opts["end"])
        elif opts["years_ahead"] is not None:
            end = min(dt.date(today.year + opts["years_ahead"], 12, 31), compute.LAST_DATE)

        bar = tqdm(
            total=max((end - start).days + 1, 0),
            unit="day",
            desc="almanac",
            disable=opts["no_progress"],
            file=self.stderr._out,
        )
        try:
            result = services.almanac_load(
                start=start, end=end, force=opts["force"], workers=opts["workers"], progress=bar.update
            )
        except compute.SourceVersionMismatch as exc:
            raise CommandError(str(exc)) from exc
        except services.InvalidRange as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bar.close()
        self.stdout.write(
            f"almanac {result.start}..{result.end}: {result.days_loaded} days loaded "
            f"({result.index_rows} index rows), {result.days_skipped} already loaded, "
            f"{result.seconds:.1f} s; source {result.source} {result.version} sect={result.sect}"
        )
