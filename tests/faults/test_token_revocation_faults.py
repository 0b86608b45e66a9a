"""A customer deactivated while Redis hangs: the revocation after commit times out, its
``TokenRevocation`` row stays, and beat's sweep revokes the tokens once Redis answers again;
from then on the sold-out gate sends the token to Django, which answers 401. On a private
``redis-server`` (``shop_redis``), frozen with SIGSTOP, never the machine's."""

from __future__ import annotations

import json
import threading
import time

import pytest

from apps.accounts import revocations
from apps.accounts.models import TokenRevocation
from apps.accounts.tokens import token_customer_id, token_issue
from apps.catalog import soldout
from starmall.gates.orders import OrderGate
from tests.orders.test_soldout_gate import Inner, call, django_answer


@pytest.mark.django_db(transaction=True)
def test_a_deactivation_while_redis_hangs_is_revoked_by_the_sweep(shop_redis, make_customer, make_sku):
    customer, sku = make_customer(), make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    head = {
        "Host": "127.0.0.1:8000",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token_issue(customer_id=customer.pk)}",
    }
    body = json.dumps({"items": [{"sku_id": sku.pk, "quantity": 1}]}).encode()
    inner = Inner()
    assert call(OrderGate(inner), body=body, headers=head)[0] == 409

    shop_redis.freeze()  # connections are accepted, nothing is answered
    watchdog = threading.Timer(8, shop_redis.thaw)  # bounds this test if the revocation hangs
    watchdog.start()
    try:
        started = time.monotonic()
        customer.is_active = False
        customer.save()  # commits; the revocation after it times out (SOCKET_TIMEOUT 2 s)
        saved_in = time.monotonic() - started
    finally:
        watchdog.cancel()
        shop_redis.thaw()
    assert saved_in < 5, f"the deactivation took {saved_in:.1f}s"
    row = TokenRevocation.objects.get(customer_id=customer.pk)
    assert (row.attempts, row.last_error.split(":")[0]) == (1, "TimeoutError")
    assert call(OrderGate(inner), body=body, headers=head)[0] == 409  # until the sweep runs

    assert revocations.token_revocations_sweep() == {"revoked": 1, "tokens": 1, "failed": 0, "found": 0}
    assert token_customer_id(head["Authorization"].split()[1]) is None
    assert call(OrderGate(inner), body=body, headers=head) == (200, {}, b"django")
    assert inner.bodies == [body]
    assert django_answer(body, head)[0] == 401
    assert not TokenRevocation.objects.exists()
