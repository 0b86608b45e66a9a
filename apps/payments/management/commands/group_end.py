"""``manage.py group_end GROUP_ID --by USERNAME``: end a forming 拼团 group now, as its deadline
would (failed and refunded, or completed by 模拟成团), with the back office's permission check."""

from django.core.management.base import BaseCommand, CommandError

from apps.payments import group_refunds
from starmall.errors import ShopError


class Command(BaseCommand):
    help = "End a forming group now, as its deadline would (failed: paid members refunded, unpaid seats cancelled)."

    def add_arguments(self, parser):
        parser.add_argument("group_id", type=int)
        parser.add_argument("--by", required=True, help="staff username with marketing.manage_groupbuy")

    def handle(self, *args, group_id: int, by: str, **options):
        try:
            outcome = group_refunds.group_end_by_staff(group_id=group_id, username=by)
        except ShopError as exc:
            raise CommandError(f"group {group_id} not ended: {exc.message}") from exc
        if outcome == "done":
            self.stdout.write(f"group {group_id} completed (模拟成团) by {by}")
        else:
            self.stdout.write(f"group {group_id} failed by {by}: paid members refunded, unpaid seats cancelled")
