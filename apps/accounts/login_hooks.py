"""What other apps do when a customer logs in, without accounts importing them.

Apps on higher layers (distribution: referral binding, channel counts) register a callable in
:data:`LOGIN_HOOKS` from their ``AppConfig.ready``; ``services.customer_login`` calls each with
``customer=``, ``scene=`` (the decoded mini-program scene, possibly empty) and ``first=`` (True
on the login that created the customer). On a first login the hooks run inside the creating
transaction, each in its own savepoint, so a binding commits with the customer or not at all;
a hook's error is logged and never fails the login (an odd scene is never an error).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

logger = logging.getLogger(__name__)

LOGIN_HOOKS: list[Callable[..., None]] = []


def login_hooks_run(*, customer, scene: str, first: bool) -> None:
    """Call every registered hook once; errors are logged, never raised."""
    for hook in LOGIN_HOOKS:
        try:
            with transaction.atomic():
                hook(customer=customer, scene=scene, first=first)
        except Exception:  # a hook's bug must not stop the customer from logging in
            logger.exception("login hook %s failed for customer %s", getattr(hook, "__name__", hook), customer.pk)
