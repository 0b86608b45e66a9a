"""``starmall.gates.postgres.BatchQueue``: what requests submit while a connection is busy goes out
as ONE statement, every item gets its own result (or None, and then nothing was written for
it), and no item is ever left waiting.

The pool here is a stand-in for psycopg_pool's (``max_size`` and ``connection()``): these tests
are about who is sent when, not about PostgreSQL (``tests/payments/test_notify_queue.py`` runs
the real statement).
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from starmall.gates import postgres


class FakePool:
    """``max_size`` connections; ``connection()`` fails with ``refuse`` when set; ``handed``: the
    connections handed out, in order."""

    def __init__(self, max_size: int, refuse: Exception | None = None) -> None:
        self.max_size, self.refuse, self.in_use, self.most_in_use = max_size, refuse, 0, 0
        self.handed: list[FakeConnection] = []

    @contextlib.asynccontextmanager
    async def connection(self, timeout: float):
        if self.refuse is not None:
            raise self.refuse
        assert self.in_use < self.max_size
        self.in_use += 1
        self.most_in_use = max(self.most_in_use, self.in_use)
        conn = FakeConnection()
        self.handed.append(conn)
        try:
            yield conn
        finally:
            self.in_use -= 1


class Warnings(list):
    """The ``warn`` of a BatchQueue: records (what, the exception's class name)."""

    def __call__(self, what: str, exc: Exception) -> None:
        self.append((what, type(exc).__name__))


WARNED = Warnings()


class FakeConnection:
    """What a ``run`` is handed: ``broken`` as psycopg's connection has it."""

    def __init__(self) -> None:
        self.broken = False


class FakeDatabase:
    name = "test-gate"

    def __init__(self, pool: FakePool | None) -> None:
        self._pool = pool

    async def pool(self):
        return self._pool


class Statements:
    """The ``run`` of a BatchQueue: records each statement's items; answers ``item * 10`` after
    ``seconds``, or raises for an item in ``fail``, or answers one result short for ``short``."""

    def __init__(self, seconds: float = 0.01, fail: set | None = None, short: set | None = None) -> None:
        self.seconds, self.fail, self.short = seconds, fail or set(), short or set()
        self.sent: list[list[int]] = []

    async def __call__(self, conn, items: list[int]) -> list[int]:
        self.sent.append(list(items))
        await asyncio.sleep(self.seconds)
        if self.fail & set(items):
            raise RuntimeError("the statement failed")
        results = [item * 10 for item in items]
        return results[:-1] if self.short & set(items) else results


def submit_all(batches: postgres.BatchQueue, items: list[int], wait: float = 1.0, spacing: float = 0.0) -> list:
    """Submit ``items`` at once (or ``spacing`` seconds apart) in one event loop; their results."""

    async def main():
        async def one(i: int, item: int):
            await asyncio.sleep(i * spacing)
            return await batches.submit(item, wait)

        try:
            return await asyncio.gather(*(one(i, item) for i, item in enumerate(items)))
        finally:
            await batches.drain()

    return asyncio.run(main())


def test_items_arriving_together_go_out_in_few_statements_each_with_its_own_result():
    pool, run = FakePool(max_size=2), Statements(seconds=0.02)
    batches = postgres.BatchQueue(FakeDatabase(pool), run, warn=WARNED)

    results = submit_all(batches, list(range(1, 41)))

    assert results == [item * 10 for item in range(1, 41)]
    assert sorted(item for sent in run.sent for item in sent) == list(range(1, 41))  # each sent once
    assert len(run.sent) <= 4  # the first two alone, then everything that waited meanwhile
    assert pool.most_in_use == 2 and pool.in_use == 0


def test_a_batch_never_exceeds_max_items():
    run = Statements(seconds=0.02)
    batches = postgres.BatchQueue(FakeDatabase(FakePool(max_size=1)), run, max_items=5, warn=WARNED)
    assert submit_all(batches, list(range(1, 18))) == [item * 10 for item in range(1, 18)]
    assert max(len(sent) for sent in run.sent) == 5
    assert sorted(item for sent in run.sent for item in sent) == list(range(1, 18))


def test_a_lone_item_goes_out_at_once():
    run = Statements(seconds=0.0)
    batches = postgres.BatchQueue(FakeDatabase(FakePool(max_size=2)), run, warn=WARNED)
    assert submit_all(batches, [7, 8, 9], spacing=0.05) == [70, 80, 90]
    assert run.sent == [[7], [8], [9]]


def test_a_failed_statement_gives_none_to_its_items_and_to_those_waiting_and_the_next_works():
    release = None
    sent: list[list[int]] = []

    async def run(conn, items):
        sent.append(list(items))
        await release.wait()  # fails only once 4-6 are waiting behind it
        raise RuntimeError("the statement failed")

    warned = Warnings()
    batches = postgres.BatchQueue(FakeDatabase(FakePool(max_size=1)), run, warn=warned)

    async def main():
        nonlocal release
        release = asyncio.Event()
        first = asyncio.ensure_future(batches.submit(3, 5))
        while not sent:
            await asyncio.sleep(0)
        waiting = [asyncio.ensure_future(batches.submit(item, 5)) for item in (4, 5, 6)]
        await asyncio.sleep(0.01)
        release.set()
        results = [await first, *[await w for w in waiting]]
        await batches.drain()
        return results

    assert asyncio.run(main()) == [None, None, None, None]  # 4-6 were waiting: Django answers them at once
    assert sent == [[3]]  # nothing else was sent
    assert warned == [("PostgreSQL unavailable", "RuntimeError")]  # one warning, the gate's
    batches.run = Statements(seconds=0.0)
    assert submit_all(batches, [8]) == [80]  # a new sender for the next request


def test_a_connection_broken_under_a_run_that_answered_is_given_back_and_the_rest_take_another():
    """A ``run`` that reports its own errors (the creates': ``orders_create`` answers each
    request's error) answers even when its connection broke: its results stand, and the items still waiting go out on a fresh
    connection instead of failing one after another on the dead one."""
    pool, used = FakePool(max_size=1), []

    async def run(conn, items):
        used.append((id(conn), list(items)))
        await asyncio.sleep(0.02)
        if 1 in items:
            conn.broken = True
            return [None for _ in items]  # its own error: these items to Django
        return [item * 10 for item in items]

    batches = postgres.BatchQueue(FakeDatabase(pool), run, warn=WARNED)
    before = len(WARNED)
    assert submit_all(batches, [1, 2, 3, 4], spacing=0.005) == [None, 20, 30, 40]
    assert [items for _, items in used] == [[1], [2, 3, 4]]
    assert len(pool.handed) == 2 and pool.handed[0].broken and not pool.handed[1].broken
    assert used[0][0] != used[1][0] and len(WARNED) == before and pool.in_use == 0


def test_a_wrong_number_of_results_gives_none_to_every_item_of_the_statement():
    run = Statements(seconds=0.0, short={2})
    batches = postgres.BatchQueue(FakeDatabase(FakePool(max_size=1)), run, warn=WARNED)
    assert submit_all(batches, [2]) == [None]


def test_an_item_no_connection_took_in_time_is_never_sent():
    """No connection (PostgreSQL down): each waiting item gets None, nothing is sent."""
    run = Statements()
    batches = postgres.BatchQueue(
        FakeDatabase(FakePool(max_size=2, refuse=TimeoutError("no connection"))), run, warn=WARNED
    )
    assert submit_all(batches, [1, 2, 3], wait=0.2) == [None, None, None]
    assert run.sent == []


def test_an_item_waiting_past_its_limit_leaves_the_queue_and_an_item_in_flight_gets_its_result():
    """``wait_seconds`` bounds the wait for a connection, not a statement under way: the item in
    a slow statement gets its result after the limit; one still queued behind it leaves at the
    limit, is never sent, and gets None."""
    run = Statements(seconds=0.3)
    batches = postgres.BatchQueue(FakeDatabase(FakePool(max_size=1)), run, warn=WARNED)

    async def main():
        first = asyncio.ensure_future(batches.submit(1, 0.1))
        await asyncio.sleep(0.02)  # 1 is in its statement
        second = await batches.submit(2, 0.1)
        results = [await first, second]
        await batches.drain()
        return results

    assert asyncio.run(main()) == [10, None]
    assert run.sent == [[1]]


def test_no_pool_means_none():
    assert submit_all(postgres.BatchQueue(FakeDatabase(None), Statements(), warn=WARNED), [1]) == [None]


@pytest.mark.parametrize("loops", [2])
def test_each_event_loop_has_its_own_queue(loops):
    run = Statements(seconds=0.0)
    batches = postgres.BatchQueue(FakeDatabase(FakePool(max_size=1)), run, warn=WARNED)
    for n in range(loops):
        assert submit_all(batches, [n + 1]) == [(n + 1) * 10]
    assert run.sent == [[1], [2]]
