from django.apps import AppConfig


class DistributionConfig(AppConfig):
    name = "apps.distribution"
    label = "distribution"
    verbose_name = "分销"

    def ready(self) -> None:
        # Apps below distribution know nothing of it (apps import only downward): it registers
        # its reactions with their registries — the login (referral scene), the paying
        # transaction's follow-up outbox (commissions), the refund (reversal) and WeChat's
        # merchant-transfer notification (payments' table of callbacks).
        from apps.accounts import login_hooks
        from apps.distribution import commissions, referral, transfers
        from apps.orders import followups
        from apps.payments import hooks, notifications

        if referral.login_scene not in login_hooks.LOGIN_HOOKS:
            login_hooks.LOGIN_HOOKS.append(referral.login_scene)
        followups.HANDLERS[followups.FollowUp.Kind.COMMISSION_AWARD] = commissions.commission_award
        if commissions.paid_kinds not in followups.PAID_KINDS:
            followups.PAID_KINDS.append(commissions.paid_kinds)
        if commissions.refund_succeeded_hook not in hooks.REFUND_SUCCEEDED:
            hooks.REFUND_SUCCEEDED.append(commissions.refund_succeeded_hook)
        if "transfer" not in notifications.HANDLERS:
            notifications.register("transfer", transfers.TRANSFER_HANDLER)
