from django.apps import AppConfig


class PrintingConfig(AppConfig):
    """Cloud receipt printers (飞鹅-style), electronic waybills (Kuaidi100-style) and the print
    jobs that send both. Above orders (beside payments): it prints orders and ships them through
    ``apps.orders.shipments``; orders hear of it only through the follow-up outbox."""

    name = "apps.printing"
    label = "printing"
    verbose_name = "打印与面单"

    def ready(self) -> None:
        # orders knows nothing of printing (apps import only downward): printing registers its
        # reaction to a payment with the paying transaction's outbox (a print_ticket follow-up
        # when a printer prints on payment) and the handler that turns it into print jobs.
        from apps.orders import followups
        from apps.printing import services

        followups.HANDLERS[followups.FollowUp.Kind.PRINT_TICKET] = services.followup_print_ticket
        if services.paid_kinds not in followups.PAID_KINDS:
            followups.PAID_KINDS.append(services.paid_kinds)
