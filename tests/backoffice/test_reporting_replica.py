"""The exports read off the replica when one is configured (``REPORTING_DATABASE``): the same rows
as the primary's, every query of the export on the replica's connection, none on the primary's;
an instance read there is saved to the primary; ``migrate`` never targets the replica.

The replica here is a second connection to the test database (``TEST: MIRROR``): what a standby
is to its primary, without the lag."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.backoffice import exports
from apps.orders.models import Order
from starmall.db_replica import REPLICA, PrimaryWritesRouter, reporting_alias


@pytest.mark.django_db(transaction=True, databases=["default", REPLICA])
def test_an_export_reads_every_row_off_the_replica_and_nothing_off_the_primary(settings):
    call_command("seed_volume", orders=400, customers=80, stdout=StringIO())
    today = timezone.localdate()
    start = today - dt.timedelta(days=370)
    on_primary = list(exports.rows("orders", start, today))
    assert len(on_primary) == 1 + Order.objects.count() == 401

    settings.REPORTING_DATABASE = REPLICA
    with CaptureQueriesContext(connection) as primary, CaptureQueriesContext(connections[REPLICA]) as standby:
        on_replica = list(exports.rows("orders", start, today))
    assert on_replica == on_primary
    assert len(primary.captured_queries) == 0
    assert len(standby.captured_queries) >= 2  # the orders, then their lines (prefetched)


def test_reports_read_the_primary_unless_told(settings):
    assert reporting_alias() == "default"


def test_an_instance_read_off_the_replica_is_written_to_the_primary_and_never_migrated():
    router = PrimaryWritesRouter()
    order = Order(order_no="R1")
    order._state.db = REPLICA
    assert router.db_for_write(Order, instance=order) == "default"
    order._state.db = "default"
    assert router.db_for_write(Order, instance=order) is None  # Django's own choice
    assert router.allow_migrate(REPLICA, "orders") is False and router.allow_migrate("default", "orders") is True
