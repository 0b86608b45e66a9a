"""``{% money_hints as hints %}``: the "who may" lines of a page (``roles.role_hints``).

An admin page names its money actions in a ``money_actions`` attribute of its ModelAdmin (a
list of ``roles.MONEY_ACTIONS`` keys, plain strings: the apps below the back office need not
import it); a page that computed its own ``role_hints`` (the order summary) passes them in.
"""

from __future__ import annotations

from django import template

from apps.backoffice import roles

register = template.Library()


@register.simple_tag(takes_context=True)
def money_hints(context, given=None) -> list[dict]:
    if isinstance(given, list):  # an undefined variable arrives as ""
        return given
    request = context.get("request")
    cl, adminform = context.get("cl"), context.get("adminform")
    model_admin = getattr(cl, "model_admin", None) or getattr(adminform, "model_admin", None)
    keys = getattr(model_admin, "money_actions", None)
    if request is None or not keys:
        return []
    return roles.role_hints(request.user, list(keys))
