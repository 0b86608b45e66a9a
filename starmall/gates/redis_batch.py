"""Calls of one Lua script made in the same turn of an event loop, sent to Redis as ONE pipeline.

In a notification storm a web worker reads many copies before its loop yields; each asked Redis
its own EVALSHA, one write and one read on a connection each. :class:`ScriptBatch` sends them
together (one write, the answers read in order) and gives every caller its own answer, or None
when Redis failed, as a lone call would (docs/PERFORMANCE.md, "One pipeline for the copies").
"""

from __future__ import annotations

import asyncio
import hashlib
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import redis.asyncio as aioredis
from redis.exceptions import NoScriptError


@dataclass
class _Pending:
    """One event loop's calls: those joining the pipeline still to be sent, and its senders."""

    open: list | None = None  # the calls of the sender due to start, None when none is due
    tasks: set[asyncio.Task] = field(default_factory=set)


class ScriptBatch:
    """``await batch.call(keys, args)``: the Lua ``script``'s answer for ``keys``/``args``, or None
    when Redis failed (down, slower than the client's timeout, an error reply; ``warn(what, exc)``
    told, the gate's one warning per interval). ``client()`` gives the running loop's Redis client.
    A Redis that lost the script (restarted) runs it by EVAL for the calls that found it missing."""

    def __init__(self, script: str, client: Callable[[], aioredis.Redis], *, warn) -> None:
        self.script, self.client, self.warn = script, client, warn
        self.sha = hashlib.sha1(script.encode()).hexdigest()  # what EVALSHA names it by
        # One queue per event loop: tests run each request in a loop of its own.
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pending] = weakref.WeakKeyDictionary()

    async def call(self, keys: list, args: list):
        loop = asyncio.get_running_loop()
        pending = self._by_loop.get(loop)
        if pending is None:
            pending = self._by_loop[loop] = _Pending()
        if pending.open is None:
            # The sender's first step runs after the steps already due in this turn of the loop:
            # every request read in this turn joins its pipeline. Made now, not by a callback
            # that would make it: under load a turn of the loop costs milliseconds.
            pending.open = calls = []
            task = loop.create_task(self._send(pending, calls))
            pending.tasks.add(task)
            task.add_done_callback(lambda task: self._sent(pending, calls, task))
        future = loop.create_future()
        pending.open.append((keys, args, future))
        return await future

    async def drain(self) -> None:
        """Wait for the pipelines due or under way (the worker's end)."""
        pending = self._by_loop.get(asyncio.get_running_loop())
        if pending is not None and pending.tasks:
            await asyncio.gather(*list(pending.tasks), return_exceptions=True)

    @staticmethod
    def _sent(pending: _Pending, calls: list, task: asyncio.Task) -> None:
        """A sender ended; one cancelled before its first step (the loop closing) leaves no call
        waiting and no sender due that never starts."""
        pending.tasks.discard(task)
        if pending.open is calls:
            pending.open = None
        for _keys, _args, future in calls:
            if not future.done():
                future.set_result(None)

    async def _send(self, pending: _Pending, calls: list[tuple[list, list, asyncio.Future]]) -> None:
        """One pipeline of EVALSHA for ``calls``; those whose script was missing once more by EVAL.
        Every caller's future gets its answer or None, whatever happens here."""
        pending.open = None  # calls from now on join the next pipeline
        try:
            answers = await self._pipeline(calls, by_sha=True)
            missing = [i for i, answer in enumerate(answers) if isinstance(answer, NoScriptError)]
            if missing:
                again = await self._pipeline([calls[i] for i in missing], by_sha=False)
                for i, answer in zip(missing, again, strict=True):
                    answers[i] = answer
            errors = [answer for answer in answers if isinstance(answer, Exception)]
            if errors:
                self.warn("Redis unavailable", errors[0])
            for (_keys, _args, future), answer in zip(calls, answers, strict=True):
                if not future.done():  # else its request is gone
                    future.set_result(None if isinstance(answer, Exception) else answer)
        except Exception as exc:  # noqa: BLE001 - down, slow, refusing or pool full: Django answers
            self.warn("Redis unavailable", exc)

    async def _pipeline(self, calls: list[tuple[list, list, asyncio.Future]], *, by_sha: bool) -> list:
        """The answers of ``calls`` in order, an error reply as its exception (not raised)."""
        async with self.client().pipeline(transaction=False) as pipe:
            for keys, args, _future in calls:
                if by_sha:
                    pipe.evalsha(self.sha, len(keys), *keys, *args)
                else:
                    pipe.eval(self.script, len(keys), *keys, *args)
            return await pipe.execute(raise_on_error=False)
