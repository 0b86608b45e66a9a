from django.apps import AppConfig


class MembersConfig(AppConfig):
    """会员: levels and the growth ledger, paid membership (SVIP) cards and periods, member prices."""

    name = "apps.members"
    label = "members"
    verbose_name = "会员"

    def ready(self) -> None:
        """The customer's SVIP expiry rides on the address card the 秒杀 gate reads (free freight
        decided in front of Django: ``apps.accounts.address_cards.CARD_EXTRAS``)."""
        from apps.accounts import address_cards
        from apps.members import selectors

        address_cards.CARD_EXTRAS["member"] = selectors.gate_card
