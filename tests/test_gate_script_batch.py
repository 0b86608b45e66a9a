"""``starmall.gates.redis_batch.ScriptBatch``: script calls made in one turn of the event loop go
to Redis as ONE pipeline, every caller gets its own answer (None when Redis failed, and then the
gate lets Django answer), and a Redis that lost the script answers all the same. Against the
suite's real Redis; the gate's own use is tests/payments/test_notify_gate.py's.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis
import redis.asyncio as aioredis
from django.conf import settings

from starmall.gates import redis_batch

# Adds ARGV[1] to KEYS[1] and answers the sum; ARGV[1] "boom" is an error reply.
SCRIPT = "if ARGV[1] == 'boom' then return redis.error_reply('boom') end return redis.call('INCRBY', KEYS[1], ARGV[1])"


def location() -> str:
    value = settings.CACHES["default"]["LOCATION"]
    return value if isinstance(value, str) else value[0]


class Warnings(list):
    def __call__(self, what: str, exc: Exception) -> None:
        self.append((what, type(exc).__name__))


class Clients:
    """The batch's ``client()``: one real client per event loop, closed by :meth:`aclose`."""

    def __init__(self, url: str, timeout: float = 0.25) -> None:
        self.url, self.timeout, self._client = url, timeout, None

    def __call__(self) -> aioredis.Redis:
        if self._client is None:
            self._client = aioredis.Redis.from_url(
                self.url, socket_timeout=self.timeout, socket_connect_timeout=self.timeout
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


@pytest.fixture
def key():
    name = f"test:script-batch:{uuid.uuid4().hex}"
    yield name
    redis.Redis.from_url(location()).delete(name)


def run(batch: redis_batch.ScriptBatch, clients: Clients, calls: list[tuple[list, list]], *, together=True) -> list:
    """The answers of ``calls`` made all in one turn of a new event loop (``together``) or one after
    another's answer."""

    async def main():
        try:
            if together:
                return await asyncio.gather(*(batch.call(keys, args) for keys, args in calls))
            return [await batch.call(keys, args) for keys, args in calls]
        finally:
            await clients.aclose()

    return asyncio.run(main())


def test_calls_made_together_go_out_as_one_pipeline_each_with_its_own_answer(key, redis_pipelines):
    clients, warned = Clients(location()), Warnings()
    batch = redis_batch.ScriptBatch(SCRIPT, clients, warn=warned)
    redis.Redis.from_url(location()).script_load(SCRIPT)
    answers = run(batch, clients, [([key], [amount]) for amount in (1, 10, 100, 1000)])
    assert answers == [1, 11, 111, 1111]  # the pipeline keeps the callers' order
    assert redis_pipelines == [4]
    assert int(redis.Redis.from_url(location()).get(key)) == 1111
    assert warned == []


def test_calls_one_after_another_go_out_alone(key, redis_pipelines):
    clients = Clients(location())
    batch = redis_batch.ScriptBatch(SCRIPT, clients, warn=Warnings())
    redis.Redis.from_url(location()).script_load(SCRIPT)
    assert run(batch, clients, [([key], [2])] * 3, together=False) == [2, 4, 6]
    assert redis_pipelines == [1, 1, 1]


def test_an_error_reply_gives_none_to_its_caller_alone_with_one_warning(key, redis_pipelines):
    clients, warned = Clients(location()), Warnings()
    batch = redis_batch.ScriptBatch(SCRIPT, clients, warn=warned)
    redis.Redis.from_url(location()).script_load(SCRIPT)
    answers = run(batch, clients, [([key], [5]), ([key], ["boom"]), ([key], [7])])
    assert answers == [5, None, 12]
    assert redis_pipelines == [3]
    assert warned == [("Redis unavailable", "ResponseError")]


def test_a_redis_without_the_script_runs_it_by_eval_for_those_calls(key, redis_pipelines):
    clients, warned = Clients(location()), Warnings()
    batch = redis_batch.ScriptBatch(SCRIPT, clients, warn=warned)
    redis.Redis.from_url(location()).script_flush()
    assert run(batch, clients, [([key], [1])] * 3) == [1, 2, 3]
    assert redis_pipelines == [3, 3]  # EVALSHA refused thrice, then EVAL (which loads it)
    assert run(batch, clients, [([key], [1])] * 2) == [4, 5]
    assert redis_pipelines == [3, 3, 2]
    assert warned == []


def test_an_unreachable_redis_gives_every_caller_none_and_one_warning(key):
    clients, warned = Clients("redis://127.0.0.1:9/0"), Warnings()
    batch = redis_batch.ScriptBatch(SCRIPT, clients, warn=warned)
    assert run(batch, clients, [([key], [1])] * 5) == [None] * 5
    assert warned == [("Redis unavailable", "ConnectionError")]


def test_drain_sends_the_calls_still_waiting(key, redis_pipelines):
    """The worker's end: a call made in the turn before ``drain`` is sent and answered by then."""
    clients = Clients(location())
    batch = redis_batch.ScriptBatch(SCRIPT, clients, warn=Warnings())
    redis.Redis.from_url(location()).script_load(SCRIPT)

    async def main():
        caller = asyncio.get_running_loop().create_task(batch.call([key], [3]))
        await asyncio.sleep(0)  # the call is made; its sender is due, not yet started
        await batch.drain()
        done = caller.done()
        await clients.aclose()
        return done, caller.result()

    assert asyncio.run(main()) == (True, 3)
    assert redis_pipelines == [1]


def test_a_caller_gone_does_not_stop_the_others(key):
    """A request cancelled while its call waits (a worker shutting down): the others are answered;
    its call, already queued, is still sent."""
    clients = Clients(location())
    batch = redis_batch.ScriptBatch(SCRIPT, clients, warn=Warnings())
    redis.Redis.from_url(location()).script_load(SCRIPT)

    async def main():
        loop = asyncio.get_running_loop()
        callers = [loop.create_task(batch.call([key], [amount])) for amount in (1, 2, 4)]
        await asyncio.sleep(0)
        callers[1].cancel()
        answers = await asyncio.gather(*callers, return_exceptions=True)
        await clients.aclose()
        return answers

    first, gone, last = asyncio.run(main())
    assert (first, type(gone).__name__, last) == (1, "CancelledError", 7)
    assert int(redis.Redis.from_url(location()).get(key)) == 7


def test_a_sender_cancelled_before_it_sent_leaves_no_caller_waiting_and_the_next_call_is_sent(key):
    """The loop closing cancels a pipeline due but not yet sent: its callers get None (Django
    answers), and a call after it gets its own pipeline."""
    clients = Clients(location())
    batch = redis_batch.ScriptBatch(SCRIPT, clients, warn=Warnings())
    redis.Redis.from_url(location()).script_load(SCRIPT)

    async def main():
        loop = asyncio.get_running_loop()
        caller = loop.create_task(batch.call([key], [5]))
        await asyncio.sleep(0)  # the call is made; its sender is due
        (sender,) = batch._by_loop[loop].tasks
        sender.cancel()
        first = await caller
        second = await batch.call([key], [6])
        await clients.aclose()
        return first, second

    assert asyncio.run(main()) == (None, 6)
