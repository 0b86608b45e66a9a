"""Which staff roles hold a permission, for messages that name them ("需财务审核").

The roles are the auth groups that ``apps/backoffice/roles.py`` makes (``sync_roles``); this
module reads the groups themselves, so any app may name them without importing the back office
(which sits above every app), and a permission granted to a group by hand shows up too.
"""

from __future__ import annotations


def role_names(perm: str) -> list[str]:
    """The names of the groups holding ``perm`` ("app_label.codename"), oldest group first."""
    from django.contrib.auth.models import Group

    app_label, codename = perm.split(".", 1)
    rows = Group.objects.filter(permissions__content_type__app_label=app_label, permissions__codename=codename)
    return list(rows.order_by("pk").values_list("name", flat=True).distinct())


def roles_text(perm: str) -> str:
    """``role_names(perm)`` joined by "、" ("财务"), or "管理员" when no group holds it."""
    return "、".join(role_names(perm)) or "管理员"
