from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


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
        from apps.printing.models import Printer

        followups.HANDLERS[followups.FollowUp.Kind.PRINT_TICKET] = services.followup_print_ticket
        if services.paid_kinds not in followups.PAID_KINDS:
            followups.PAID_KINDS.append(services.paid_kinds)
        # payments read "some printer prints on payment" from the cache: any saved or deleted
        # printer drops it (the admin, the demo data, a shell)
        post_save.connect(_printers_changed, sender=Printer, dispatch_uid="printing-printer-save")
        post_delete.connect(_printers_changed, sender=Printer, dispatch_uid="printing-printer-delete")


def _printers_changed(sender, **kwargs) -> None:
    from apps.printing.selectors import print_on_payment_cache_clear

    print_on_payment_cache_clear()
