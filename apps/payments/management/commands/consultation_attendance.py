"""``manage.py consultation_attendance ORDER_NO attended|no_show|teacher_absent --by USERNAME``:
mark a consultation's attendance with the back office's permission (``teacher_absent``: a full
refund at once). One line; a refusal exits non-zero."""

from django.core.management.base import BaseCommand, CommandError

from apps.payments import attendance as service
from starmall.errors import ShopError


class Command(BaseCommand):
    help = "Mark a consultation attended, no_show or teacher_absent (a full refund at once)."

    def add_arguments(self, parser):
        parser.add_argument("order_no")
        parser.add_argument("attendance", choices=["attended", "no_show", "teacher_absent"])
        parser.add_argument("--by", required=True, help="staff username with appointments.mark_attendance")

    def handle(self, *args, order_no: str, attendance: str, by: str, **options):
        try:
            booking = service.attendance_mark_by_staff(order_no=order_no, attendance=attendance, username=by)
        except ShopError as exc:
            raise CommandError(f"{order_no} not marked: {exc.message}") from exc
        self.stdout.write(f"{order_no} marked {booking.attendance} by {by}")
