from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class AccountsConfig(AppConfig):
    verbose_name = "顾客与账户"
    name = "apps.accounts"
    label = "accounts"

    def ready(self) -> None:
        """A customer saved as inactive, or deleted, loses every API token after commit, whoever
        does it (the admin's change form, a shell): a ``TokenRevocation`` row in the save's (or
        delete's) transaction, ``revocations.token_revocations_record``; staff's bulk action
        records them in ``services.customers_deactivate``, and beat's sweep finds the rest."""
        from apps.accounts.models import Customer

        post_save.connect(_customer_saved, sender=Customer, dispatch_uid="customer-deactivated-tokens")
        post_delete.connect(_customer_deleted, sender=Customer, dispatch_uid="customer-deleted-tokens")


def _customer_saved(sender, instance, **kwargs) -> None:
    if not instance.is_active:
        from apps.accounts.revocations import token_revocations_record

        token_revocations_record(customer_ids=[instance.pk])


def _customer_deleted(sender, instance, **kwargs) -> None:
    from apps.accounts.revocations import token_revocations_record

    token_revocations_record(customer_ids=[instance.pk])
