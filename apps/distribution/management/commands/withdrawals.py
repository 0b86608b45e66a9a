"""``manage.py withdrawals approve WITHDRAWAL_NO --by USERNAME`` /
``manage.py withdrawals reject WITHDRAWAL_NO --reason TEXT --by USERNAME``: exactly what the
back office's actions do, with the same permission check (``distribution.decide_withdrawal``)
for ``--by``. Prints one line; exits non-zero with the reason when it refuses."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.distribution import withdrawals
from starmall.errors import ShopError


class Command(BaseCommand):
    help = "审核提现：approve（批准并发起商家转账）或 reject（驳回并退回佣金）。"

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["approve", "reject"])
        parser.add_argument("withdrawal_no")
        parser.add_argument("--by", required=True, help="staff username holding distribution.decide_withdrawal")
        parser.add_argument("--reason", default="", help="rejection reason (reject)")

    def handle(self, *args, action, withdrawal_no, by, reason, **options):
        user = get_user_model().objects.filter(username=by).first()
        if user is None:
            raise CommandError(f"no staff user {by!r}")
        try:
            if action == "approve":
                done = withdrawals.withdrawal_approve(withdrawal_no=withdrawal_no, user=user)
                self.stdout.write(
                    f"approved {done.withdrawal_no} ({done.amount_fen} fen); merchant transfer sent "
                    f"(已批准，商家转账已发起)"
                )
            else:
                done = withdrawals.withdrawal_reject(withdrawal_no=withdrawal_no, reason=reason, user=user)
                self.stdout.write(
                    f"rejected {done.withdrawal_no}; {done.amount_fen} fen back to available (已驳回：{done.reason})"
                )
        except ShopError as exc:
            raise CommandError(f"refused: {exc.message}") from exc
