"""Where the back office's big reads go: the read replica when one is configured.

``DATABASE_REPLICA_URL`` (optional) adds the ``replica`` alias (a PostgreSQL streaming standby);
``REPORTING_DATABASE`` is then ``"replica"``. :func:`reporting_alias` is what exports and the
dashboard's figures read with (``Model.objects.using(reporting_alias())``): their related reads
follow the instance's database, so a whole export is read off the standby. It lags the primary by
the replication delay, which an export of past days or a dashboard figure can bear and an order's
page or a payment cannot: everything else reads and writes ``default``.
:class:`PrimaryWritesRouter` keeps every write and every migration on ``default``.
"""

from __future__ import annotations

from django.conf import settings

REPLICA = "replica"


def reporting_alias() -> str:
    """The database alias for exports and dashboard figures: ``settings.REPORTING_DATABASE``."""
    return getattr(settings, "REPORTING_DATABASE", "default")


class PrimaryWritesRouter:
    """Reads stay where the queryset says (``default`` unless ``.using(...)``); an instance read
    off the replica is saved to ``default``; ``migrate`` never runs against the replica."""

    def db_for_write(self, model, **hints):
        instance = hints.get("instance")
        if instance is not None and instance._state.db == REPLICA:
            return "default"
        return None  # Django's own choice: the instance's database, else default

    def allow_relation(self, obj1, obj2, **hints):
        return {obj1._state.db, obj2._state.db} <= {"default", REPLICA} or None

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db != REPLICA
