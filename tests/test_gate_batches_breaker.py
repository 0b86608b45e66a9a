"""Attacks on ``starmall.gates.postgres.BatchQueue`` with the stand-in pool of tests/test_gate_batches.py:
items stranded, cancelled waiters, senders failing with a BaseException, timeouts while the
connection is late, two loops sharing one BatchQueue."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from starmall.gates import postgres
from tests.test_gate_batches import WARNED, FakeDatabase, FakePool, Statements


def test_requests_submitting_again_as_soon_as_answered_are_never_stranded():
    """Each answer immediately submits the next item (a sender finishing its batch while a
    new submit arrives, over and over): all 200 answered, every sender gone at the end."""
    pool = FakePool(1)
    batches = postgres.BatchQueue(FakeDatabase(pool), Statements(seconds=0), warn=WARNED)

    async def main():
        async def chain(start: int):
            out = []
            for i in range(start, start + 40):
                out.append(await batches.submit(i, 5.0))
            return out

        results = await asyncio.wait_for(asyncio.gather(*(chain(k * 100) for k in range(5))), 10)
        await batches.drain()
        return results, batches._pending()

    results, pending = asyncio.run(main())
    assert results == [[i * 10 for i in range(k * 100, k * 100 + 40)] for k in range(5)]
    assert (pending.running, pending.entries, pending.tasks, pool.in_use) == (0, [], set(), 0)


def test_a_cancelled_waiter_does_not_strand_the_others_and_is_still_sent():
    """A request task cancelled while its item waits (client gone): the others get their results,
    the senders end. The cancelled item stays queued and IS sent (judged acceptable for the
    notify gate: its row and queued marker are written; WeChat re-sends and gets SUCCESS)."""
    pool = FakePool(1)
    release = asyncio.Event
    statements = Statements(seconds=0)
    gate_open: dict = {}

    async def run(conn, items):
        await gate_open["event"].wait()
        return await statements(conn, items)

    batches = postgres.BatchQueue(FakeDatabase(pool), run, warn=WARNED)

    async def main():
        gate_open["event"] = release()
        first = asyncio.create_task(batches.submit(1, 5.0))
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # the sender holds item 1 in its statement
        waiting = [asyncio.create_task(batches.submit(i, 5.0)) for i in (2, 3, 4)]
        await asyncio.sleep(0)
        waiting[1].cancel()  # item 3's request goes away while 3 waits for the connection
        gate_open["event"].set()
        results = await asyncio.gather(first, *waiting, return_exceptions=True)
        await batches.drain()
        return results, batches._pending()

    results, pending = asyncio.run(main())
    assert results[0] == 10 and results[1] == 20 and results[3] == 40
    assert isinstance(results[2], asyncio.CancelledError)
    assert statements.sent == [[1], [2, 3, 4]]
    assert (pending.running, pending.entries, pool.in_use) == (0, [], 0)


def test_an_item_timed_out_while_the_connection_is_late_is_never_sent():
    """No connection within wait_seconds: None, and once the connection comes the item is not
    sent (nothing written for an item answered None)."""
    come = {}

    class LatePool(FakePool):
        @contextlib.asynccontextmanager
        async def connection(self, timeout):
            await come["event"].wait()
            async with super().connection(timeout) as conn:
                yield conn

    pool = LatePool(1)
    statements = Statements(seconds=0)
    batches = postgres.BatchQueue(FakeDatabase(pool), statements, warn=WARNED)

    async def main():
        come["event"] = asyncio.Event()
        early = await batches.submit(1, 0.05)  # times out: the connection has not come
        come["event"].set()
        late = await batches.submit(2, 5.0)
        await batches.drain()
        return early, late, batches._pending()

    early, late, pending = asyncio.run(main())
    assert (early, late) == (None, 20)
    assert statements.sent == [[2]]
    assert (pending.running, pending.entries) == (0, [])


def test_a_sender_dying_of_a_base_exception_leaves_no_item_waiting_forever():
    """The statement raises a BaseException (a cancelled sender): the items of its statement get
    None at once; one waiting behind it (no other sender: running was 1) gets None by its
    wait_seconds at the latest, never sent, and the next submit is served by a new sender."""
    pool = FakePool(1)
    calls = {"n": 0}
    events: dict = {}

    async def run(conn, items):
        calls["n"] += 1
        if calls["n"] == 1:
            events["started"].set()
            await events["proceed"].wait()
            raise asyncio.CancelledError()
        return [item * 10 for item in items]

    batches = postgres.BatchQueue(FakeDatabase(pool), run, warn=WARNED)

    async def main():
        events["started"], events["proceed"] = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(batches.submit(1, 5.0))
        await events["started"].wait()
        behind = asyncio.create_task(batches.submit(2, 0.3))
        for _ in range(3):
            await asyncio.sleep(0)
        assert [e.item for e in batches._pending().entries] == [2]  # waiting behind the statement
        events["proceed"].set()
        results = await asyncio.wait_for(asyncio.gather(first, behind, return_exceptions=True), 5)
        again = await batches.submit(3, 5.0)
        await batches.drain()
        return results, again, batches._pending()

    results, again, pending = asyncio.run(main())
    assert results == [None, None]
    assert calls["n"] == 2 and again == 30  # item 2 never sent
    assert (pending.running, pending.entries, pool.in_use) == (0, [], 0)


class _RacyState(postgres.BatchQueue):
    """Makes the two threads' first submits store their loop's state one right after the other
    (what a thread switch between ``_pending``'s store and its read does)."""

    barrier = threading.Barrier(2)

    @property
    def _loop_state(self):
        return self.__dict__.get("_state")

    @_loop_state.setter
    def _loop_state(self, value):
        self.__dict__["_state"] = value
        if value is not None:
            try:
                self.barrier.wait(2)
            except threading.BrokenBarrierError:
                pass


def test_two_loops_in_two_threads_sharing_one_batches_each_get_their_own_results():
    """Two event loops in two threads (how the tests run gates) submit to one BatchQueue at once:
    each statement holds one loop's items, each item gets its own result."""
    sent_by: list[tuple[int, list]] = []
    go = threading.Barrier(2)

    class PerLoopDatabase:
        name = "test-gate"

        def __init__(self):
            self.pools = {}

        async def pool(self):
            return self.pools.setdefault(id(asyncio.get_running_loop()), FakePool(1))

    async def run(conn, items):
        sent_by.append((threading.get_ident(), list(items)))
        await asyncio.sleep(0)
        return [item * 10 for item in items]

    batches = _RacyState(PerLoopDatabase(), run, warn=WARNED)
    results: dict = {}

    def thread(base: int):
        async def main():
            out = await asyncio.gather(*(batches.submit(base + i, 0.5) for i in range(3)))
            await batches.drain()
            return out

        go.wait()
        results[base] = (threading.get_ident(), asyncio.run(main()))

    threads = [threading.Thread(target=thread, args=(b,)) for b in (100, 200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    owners = {ident: base for base, (ident, _out) in results.items()}
    mixed = [items for ident, items in sent_by if any(item // 100 * 100 != owners[ident] for item in items)]
    # Found: the later-stored loop's state is returned to BOTH threads; the senders' counts mix,
    # two senders use one loop's one-connection pool (the stand-in asserts), items answered None.
    assert (mixed, results[100][1], results[200][1]) == ([], [1000, 1010, 1020], [2000, 2010, 2020])
