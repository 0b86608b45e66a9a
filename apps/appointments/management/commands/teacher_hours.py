import datetime as dt

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from apps.appointments.hours import hours_set
from starmall.errors import ShopError


class Command(BaseCommand):
    help = (
        "Set a teacher's hours: --weekday 1..7 --hours 09:00-12:00,14:00-18:00, or --date YYYY-MM-DD with "
        "--hours ..., --off or --clear. One line; bookings already made are kept and named."
    )

    def add_arguments(self, parser):
        parser.add_argument("teacher_id", type=int)
        parser.add_argument("--weekday", type=int)
        parser.add_argument("--date", type=dt.date.fromisoformat)
        parser.add_argument("--hours")
        parser.add_argument("--off", action="store_true")
        parser.add_argument("--clear", action="store_true")

    def handle(self, *args, teacher_id, weekday, date, hours, off, clear, **options):
        try:
            kept = hours_set(teacher_id=teacher_id, weekday=weekday, date=date, hours=hours, off=off, clear=clear)
        except ShopError as exc:
            raise CommandError(exc.message) from None
        what = f"周{weekday}" if weekday else f"{date}"
        line = f"teacher {teacher_id} {what}: {'休息' if off else '恢复每周时间' if clear else hours}"
        if kept:
            named = ", ".join(f"{b.order_no} {timezone.localtime(b.start):%m-%d %H:%M}" for b in kept)
            line += f"; kept bookings outside the hours: {named}"
        self.stdout.write(line)
