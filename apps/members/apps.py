from django.apps import AppConfig


class MembersConfig(AppConfig):
    """会员: levels and the growth ledger, paid membership (SVIP) cards and periods, member prices."""

    name = "apps.members"
    label = "members"
    verbose_name = "会员"
