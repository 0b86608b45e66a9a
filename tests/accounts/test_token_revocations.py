"""A deactivated customer's API tokens are revoked until Redis confirms it
(``apps.accounts.revocations``): a ``TokenRevocation`` row in the deactivating transaction,
tried after commit, retried by beat's sweep, which also finds deactivations done by SQL."""

import pytest
import redis
from django.db import connection, transaction

from apps.accounts import revocations, services, tokens
from apps.accounts.models import Customer, TokenRevocation
from apps.accounts.tokens import token_customer_id, token_issue

pytestmark = pytest.mark.django_db


@pytest.fixture
def redis_fails_once(monkeypatch):
    """The next ``tokens_revoke_customer`` raises ConnectionError (Redis down); later ones work."""
    real = tokens.tokens_revoke_customer
    calls = []

    def revoke(customer_id):
        calls.append(customer_id)
        if len(calls) == 1:
            raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return real(customer_id)

    monkeypatch.setattr(tokens, "tokens_revoke_customer", revoke)
    return calls


def pending() -> list[tuple[int, int]]:
    return list(TokenRevocation.objects.order_by("customer_id").values_list("customer_id", "attempts"))


def deactivate_by_sql(customer) -> None:
    with connection.cursor() as cursor:  # no ORM, no signal: as a DBA or a script would
        cursor.execute(f"UPDATE {Customer._meta.db_table} SET is_active = %s WHERE id = %s", [False, customer.pk])


def test_deactivation_records_the_row_in_its_transaction_and_revokes_after_commit(
    customer, django_capture_on_commit_callbacks
):
    token = token_issue(customer_id=customer.pk)
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            customer.is_active = False
            customer.save(update_fields=["is_active"])
            assert pending() == [(customer.pk, 0)]  # written with the deactivation
            assert token_customer_id(token) == customer.pk  # Redis only after the commit
    assert token_customer_id(token) is None
    assert pending() == []  # Redis confirmed: nothing left to retry


def test_a_rolled_back_deactivation_leaves_no_row_and_the_token(customer, django_capture_on_commit_callbacks):
    token = token_issue(customer_id=customer.pk)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(RuntimeError), transaction.atomic():
            customer.is_active = False
            customer.save()
            raise RuntimeError("the staff's transaction failed")
    assert (callbacks, pending(), token_customer_id(token)) == ([], [], customer.pk)
    assert Customer.objects.get(pk=customer.pk).is_active


@pytest.mark.django_db(transaction=True)
def test_a_save_outside_any_transaction_commits_with_its_row(customer, monkeypatch):
    """``Customer.save`` opens the transaction the receiver writes into: a failing row insert
    takes the deactivation back with it (autocommit would have kept it without its row)."""
    token_issue(customer_id=customer.pk)

    def broken(*, customer_ids):
        raise RuntimeError("disk full")

    monkeypatch.setattr(revocations, "token_revocations_record", broken)
    with pytest.raises(RuntimeError):
        customer.is_active = False
        customer.save()
    assert Customer.objects.get(pk=customer.pk).is_active


def test_redis_down_after_commit_keeps_the_row_and_the_sweep_revokes(
    customer, redis_fails_once, django_capture_on_commit_callbacks, caplog
):
    token = token_issue(customer_id=customer.pk)
    with django_capture_on_commit_callbacks(execute=True):
        customer.is_active = False
        customer.save()
    assert token_customer_id(token) == customer.pk  # the revocation failed...
    assert pending() == [(customer.pk, 1)]  # ...and is kept, with the error
    assert TokenRevocation.objects.get().last_error.startswith("ConnectionError: Error 111")
    assert "beat's sweep retries" in caplog.text
    assert revocations.token_revocations_sweep() == {"revoked": 1, "tokens": 1, "failed": 0, "found": 0}
    assert (token_customer_id(token), pending(), redis_fails_once) == (None, [], [customer.pk, customer.pk])


def test_customers_deactivate_records_rows_in_its_transaction(make_customer, django_capture_on_commit_callbacks):
    first, second, kept = make_customer(), make_customer(), make_customer()
    issued = {c.pk: token_issue(customer_id=c.pk) for c in (first, second, kept)}
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert services.customers_deactivate(customer_ids=[first.pk, second.pk]) == 2
    assert pending() == [(first.pk, 0), (second.pk, 0)]
    for callback in callbacks:
        callback()
    assert {pk: token_customer_id(t) for pk, t in issued.items()} == {first.pk: None, second.pk: None, kept.pk: kept.pk}
    assert pending() == []


def test_plain_sql_deactivations_are_found_by_the_sweep(make_customer, django_capture_on_commit_callbacks):
    """``bulk_update`` and ``update`` are plain SQL (the wallet's hot path stays one UPDATE):
    they record nothing, and beat's sweep finds the customers they left inactive with tokens."""
    first, second = make_customer(), make_customer()
    first_token, second_token = token_issue(customer_id=first.pk), token_issue(customer_id=second.pk)
    first.is_active = False
    with django_capture_on_commit_callbacks(execute=False):
        Customer.objects.bulk_update([first, second], ["is_active"])
        Customer.objects.filter(pk=second.pk).update(balance_fen=100)
        Customer.objects.filter(pk=second.pk).update(is_active=True)
    assert pending() == []
    assert revocations.token_revocations_sweep() == {"revoked": 1, "tokens": 1, "failed": 0, "found": 1}
    assert (token_customer_id(first_token), token_customer_id(second_token), pending()) == (None, second.pk, [])


def test_the_admin_action_deactivates_and_revokes(make_customer, boss, django_capture_on_commit_callbacks):
    chosen, already, kept = make_customer(), make_customer(), make_customer()
    Customer.objects.filter(pk=already.pk).update(is_active=False)
    TokenRevocation.objects.all().delete()
    token, kept_token = token_issue(customer_id=chosen.pk), token_issue(customer_id=kept.pk)
    with django_capture_on_commit_callbacks(execute=True):
        response = boss.post(
            "/admin/accounts/customer/",
            {"action": "deactivate", "_selected_action": [chosen.pk, already.pk]},
            follow=True,
        )
    assert response.status_code == 200
    assert "已停用 1 位顾客" in response.content.decode()
    assert sorted(Customer.objects.filter(is_active=False).values_list("pk", flat=True)) == [chosen.pk, already.pk]
    assert (token_customer_id(token), token_customer_id(kept_token), pending()) == (None, kept.pk, [])


def test_a_deactivation_by_sql_is_found_by_the_sweep(make_customer):
    gone, quiet, active = make_customer(), make_customer(), make_customer()
    tokens_of = {c.pk: [token_issue(customer_id=c.pk), token_issue(customer_id=c.pk)] for c in (gone, active)}
    deactivate_by_sql(gone)
    deactivate_by_sql(quiet)  # inactive, but no token in Redis: nothing to do
    assert pending() == []  # SQL wrote no row
    assert [token_customer_id(t) for t in tokens_of[gone.pk]] == [gone.pk, gone.pk]
    assert revocations.token_revocations_sweep() == {"revoked": 1, "tokens": 2, "failed": 0, "found": 1}
    assert [token_customer_id(t) for t in tokens_of[gone.pk]] == [None, None]
    assert [token_customer_id(t) for t in tokens_of[active.pk]] == [active.pk, active.pk]
    assert pending() == []
    assert revocations.token_revocations_sweep() == {"revoked": 0, "tokens": 0, "failed": 0, "found": 0}


def test_the_sweep_reads_inactive_customers_in_chunks(make_customer, monkeypatch):
    monkeypatch.setattr(revocations, "SCAN_CHUNK", 2)
    customers = [make_customer() for _ in range(5)]
    issued = [token_issue(customer_id=c.pk) for c in customers]
    for customer in customers:
        deactivate_by_sql(customer)
    assert revocations.token_revocations_sweep()["found"] == 5
    assert [token_customer_id(t) for t in issued] == [None] * 5


def test_a_deactivation_during_the_redis_call_keeps_its_row(customer, monkeypatch):
    """Reactivated, logged in and deactivated again while a revocation runs: the row is refreshed
    (``requested_at``), so the run that started before does not delete it."""
    real = tokens.tokens_revoke_customer
    later = []

    def revoke(customer_id):
        revoked = real(customer_id)
        if not later:
            later.append(token_issue(customer_id=customer_id))  # issued after the revocation read the set
            revocations.token_revocations_record(customer_ids=[customer_id])
        return revoked

    TokenRevocation.objects.create(customer_id=customer.pk)
    monkeypatch.setattr(tokens, "tokens_revoke_customer", revoke)
    assert revocations.token_revocations_process()["revoked"] == 1
    assert pending() == [(customer.pk, 0)]  # still to do
    assert token_customer_id(later[0]) == customer.pk
    assert revocations.token_revocations_process()["revoked"] == 1
    assert (token_customer_id(later[0]), pending()) == (None, [])


def test_a_run_stops_at_the_first_redis_error_and_tries_that_row_last(make_customer, redis_fails_once):
    first, second = make_customer(), make_customer()
    TokenRevocation.objects.create(customer_id=first.pk)
    TokenRevocation.objects.create(customer_id=second.pk)
    assert revocations.token_revocations_process() == {"revoked": 0, "tokens": 0, "failed": 1}
    assert pending() == [(first.pk, 1), (second.pk, 0)]
    assert revocations.token_revocations_process() == {"revoked": 2, "tokens": 0, "failed": 0}
    assert redis_fails_once == [first.pk, second.pk, first.pk]


def test_deleting_a_customer_revokes_their_tokens(customer, django_capture_on_commit_callbacks):
    token = token_issue(customer_id=customer.pk)
    with django_capture_on_commit_callbacks(execute=True):
        customer.delete()
    assert (token_customer_id(token), pending()) == (None, [])


def test_customers_deactivate_changes_only_active_ones(make_customer, django_capture_on_commit_callbacks):
    active, inactive = make_customer(), make_customer()
    Customer.objects.filter(pk=inactive.pk).update(is_active=False)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.customers_deactivate(customer_ids=[active.pk, inactive.pk, 10**9]) == 1
    assert not Customer.objects.get(pk=active.pk).is_active


def test_the_sweep_is_on_beats_schedule(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["tokens-revoke-sweep"]
    assert (entry["task"], entry["schedule"]) == (
        "apps.accounts.tasks.tokens_revoke_sweep",
        settings.BEAT_SWEEP_SECONDS,
    )
    from apps.accounts.tasks import tokens_revoke_sweep

    assert tokens_revoke_sweep.name == entry["task"]
