"""PgBouncer in transaction mode in front of PostgreSQL (docs/DEPLOY.md): a real pgbouncer from
Debian's packages, started here on a free port. A server-side cursor (``.iterator()``, the
finance exports) is declared on one server connection and fetched on whichever one the next
transaction gets: behind PgBouncer it breaks unless ``DATABASE_DISABLE_SERVER_SIDE_CURSORS`` is
set, and with it set the exports read every row."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest
from django.db import DatabaseError, connection
from fault_helpers import free_port, wait_for

PGBOUNCER = "/usr/sbin/pgbouncer"
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not Path(PGBOUNCER).exists(), reason="needs Debian's pgbouncer (apt-get install pgbouncer)"),
]


@pytest.fixture
def pgbouncer():
    """pgbouncer (transaction pooling, 2 server connections per database) on 127.0.0.1:<free
    port> in front of the test's PostgreSQL server; -> its port. Run as ``postgres`` (pgbouncer
    refuses root) from a folder of its own, stopped by its pid."""
    s = connection.settings_dict
    workdir = Path(tempfile.mkdtemp(prefix="starmall-pgbouncer-"))
    workdir.chmod(0o777)
    port = free_port()
    (workdir / "users.txt").write_text(f'"{s["USER"]}" "{s["PASSWORD"] or ""}"\n')
    (workdir / "pgbouncer.ini").write_text(
        "\n".join(
            [
                "[databases]",
                f"* = host={s['HOST'] or '127.0.0.1'} port={s['PORT'] or 5432}",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                f"listen_port = {port}",
                "unix_socket_dir =",
                "auth_type = trust",
                f"auth_file = {workdir / 'users.txt'}",
                "pool_mode = transaction",
                "default_pool_size = 2",
                "max_client_conn = 50",
                f"logfile = {workdir / 'pgbouncer.log'}",
                "ignore_startup_parameters = extra_float_digits,options",
                "",
            ]
        )
    )
    for path in workdir.iterdir():
        path.chmod(0o644)
    user = ["-u", "postgres"] if os.geteuid() == 0 else []
    process = subprocess.Popen(
        [PGBOUNCER, *user, str(workdir / "pgbouncer.ini")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

    def answers():
        assert process.poll() is None, (workdir / "pgbouncer.log").read_text(errors="replace")
        try:
            with psycopg.connect(host="127.0.0.1", port=port, user=s["USER"], dbname=s["NAME"], connect_timeout=2) as c:
                return c.execute("SELECT 1").fetchone() == (1,)
        except psycopg.OperationalError:
            return False

    try:
        wait_for(answers, timeout=20, interval=0.2, what="pgbouncer")
        yield port
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            process.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


def _runs(n: int) -> list[dt.date]:
    from apps.payments.models import ReconciliationRun

    days = [dt.date(2026, 11, 1) + dt.timedelta(days=i) for i in range(n)]
    ReconciliationRun.objects.bulk_create(
        ReconciliationRun(bill_date=d, status="ok", wechat_fen=100 * i) for i, d in enumerate(days)
    )
    return days


def _export_through(port: int, *, disable_server_side_cursors: bool, other_client) -> list[list]:
    """The reconciliation export read through pgbouncer, while another client opens a transaction
    between two fetches (it takes the server connection the cursor was declared on)."""
    from apps.backoffice import exports

    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(
        HOST="127.0.0.1", PORT=str(port), DISABLE_SERVER_SIDE_CURSORS=disable_server_side_cursors
    )
    try:
        out = []
        rows = exports.rows("reconciliation", dt.date(2026, 11, 1), dt.date(2026, 11, 30))
        out.append(next(rows))  # the header
        out.append(next(rows))  # the cursor is open, the first chunk fetched
        other_client.execute("SELECT 1")  # BEGIN ... : holds a server connection (the most recently used)
        out.extend(rows)
        return out
    finally:
        other_client.rollback()
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


def test_exports_read_every_row_behind_pgbouncer_in_transaction_mode(transactional_db, pgbouncer, monkeypatch):
    from apps.backoffice import exports

    days = _runs(7)
    monkeypatch.setattr(exports, "CHUNK", 2)  # several fetches
    s = connection.settings_dict
    with psycopg.connect(host="127.0.0.1", port=pgbouncer, user=s["USER"], dbname=s["NAME"]) as other:
        # Server-side cursors (Django's default): the next FETCH lands on another server connection.
        with pytest.raises((DatabaseError, psycopg.Error), match="cursor .* does not exist"):
            _export_through(pgbouncer, disable_server_side_cursors=False, other_client=other)
        rows = _export_through(pgbouncer, disable_server_side_cursors=True, other_client=other)
    assert [row[0] for row in rows[1:]] == list(days)  # the bill date as a date cell (typed exports)
    assert [row[4] for row in rows[1:]] == [i for i in range(7)]  # wechat_fen 100 * i fen in yuan


def test_the_setting_follows_the_environment():
    import subprocess
    import sys

    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='starmall.settings.test'; django.setup(); "
        "from django.conf import settings; print(settings.DATABASES['default'].get('DISABLE_SERVER_SIDE_CURSORS'))"
    )
    env = {**os.environ, "DATABASE_DISABLE_SERVER_SIDE_CURSORS": "true"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1] == "True", result.stderr[-2000:]


def test_a_flash_sale_winners_create_before_django_works_behind_pgbouncer(
    transactional_db, pgbouncer, monkeypatch, customer, address, make_flash_sale
):
    """The gate's order threads through PgBouncer in transaction mode (2 server connections):
    ``orders_create``'s transaction is one there too. A winner is created; a refusal (stock gone
    in the database) rolls back whole, is answered as Django answers it, and leaves the server
    connection clean for the next."""

    from django.db import connections

    from apps.accounts import address_cards
    from apps.marketing.models import FlashSale
    from apps.orders.models import Order
    from apps.shipping import selectors as freight
    from starmall.gates.orders import OrderGate
    from tests.orders.test_create_gate import _body, _confirm, _headers, run
    from tests.orders.test_soldout_gate import Inner

    sale = make_flash_sale(stock=3, limit=3)
    address_cards.card_refresh(customer.pk)
    freight.all_terms()
    # the order threads' connections only (made from these settings when a thread first connects)
    monkeypatch.setitem(connections.settings, "default", {**connections.settings["default"], "PORT": pgbouncer})
    headers = _headers(customer)
    first, second, third = (_confirm(customer, sale) for _ in range(3))
    gate = OrderGate(Inner())
    assert run(gate, [(_body(first), headers)])[0][0] == 201
    FlashSale.objects.filter(pk=sale.pk).update(stock=0)
    status, _, body = run(gate, [(_body(second), headers)])[0]  # refused: nothing kept
    assert (status, json.loads(body)["code"]) == (409, "insufficient_stock")
    FlashSale.objects.filter(pk=sale.pk).update(stock=2)
    assert run(gate, [(_body(third), headers)])[0][0] == 201
    assert Order.objects.filter(flash_sale=sale).count() == 2
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (1, 2)


def test_the_notify_gates_queue_works_behind_pgbouncer(
    transactional_db, pgbouncer, monkeypatch, settings, buyer, make_sku, place_order, wechat
):
    """The notify gate's statement through PgBouncer in transaction mode, more times than
    psycopg's prepare threshold: bound client-side, nothing prepared, each result queued once
    and applied by the worker's drain."""
    from apps.orders.models import Order
    from apps.payments import notify_queue
    from apps.payments.models import QueuedNotification
    from starmall import dispatch
    from starmall.gates import postgres
    from starmall.gates.payment_notify import NOTIFY_PATH, PaymentNotifyGate
    from tests.orders.test_create_gate import run
    from tests.orders.test_soldout_gate import Inner

    headers = {"Host": "127.0.0.1:8000", "Content-Type": "text/xml"}
    settings.MAX_UNPAID_ORDERS = 20
    monkeypatch.setattr(dispatch, "push", lambda *args, **kwargs: True)
    conninfo = postgres.conninfo
    monkeypatch.setattr(postgres, "conninfo", lambda db, **kw: conninfo({**db, "PORT": pgbouncer}, **kw))
    gate = PaymentNotifyGate(Inner())
    orders = []
    for _ in range(8):
        order = place_order(buyer.api, items=[(make_sku(price_fen=12800, stock=5), 1)])
        buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
        wechat.control.pay(order["order_no"])
        body = wechat.control.notifications(out_trade_no=order["order_no"])[0]["body"].encode()
        orders.append(order["order_no"])
        answers = run(gate, [(body, headers), (body, headers)], path=NOTIFY_PATH)
        assert [a[2].count(b"SUCCESS") for a in answers] == [1, 1]
    assert gate.app.bodies == []
    assert QueuedNotification.objects.count() == 8
    assert notify_queue.queued_drain() == 8
    assert Order.objects.filter(order_no__in=orders, status="paid").count() == 8
