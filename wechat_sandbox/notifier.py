"""Delivery of payment and refund notifications, with WeChat's retries.

A notice counts as delivered only when the shop answers HTTP 200 with XML whose
``return_code`` is SUCCESS. Otherwise it is sent again after the (scaled) waits of
``RETRY_SCHEDULE_SECONDS`` and given up after the last one. Every attempt is recorded as::

    {"notification_id": 1, "attempt_no": 1, "at": "2026-11-30T12:00:00+08:00", "ts": 1.8e9,
     "url": "...", "status": 200, "response": "<xml>...", "ok": True, "error": None,
     "duration_ms": 12}

``status`` is 0 when no HTTP answer came (connection refused, timeout: see ``error``).
Two ways to deliver: the :class:`Notifier` thread (``auto_notify=True``), or
:func:`deliver_pending` in the caller's thread (tests, ``POST /sandbox/notifications/deliver``).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from . import wire
from .models import Notification
from .state import SandboxError, SandboxState, Transport

log = logging.getLogger("wechat_sandbox.notifier")

MAX_RESPONSE_CHARS = 2000


def http_transport(timeout: float = 5.0) -> Transport:
    """The default transport: ``requests.post`` of the XML with ``timeout`` seconds, no
    redirects followed."""

    def transport(url: str, body: bytes) -> tuple[int, str]:
        response = requests.post(
            url,
            data=body,
            timeout=timeout,
            allow_redirects=False,
            headers={"Content-Type": "text/xml; charset=utf-8", "User-Agent": "Mozilla/4.0"},
        )
        return response.status_code, response.text

    return transport


def is_acknowledged(status: int, text: str) -> bool:
    """True if the shop's answer is HTTP 200 and XML with ``return_code`` SUCCESS."""
    if status != 200:
        return False
    try:
        fields = wire.parse_xml(text or "")
    except wire.XMLFormatError:
        return False
    return fields.get("return_code", "").strip() == "SUCCESS"


def _resolve(state: SandboxState, transport: Transport | None) -> Transport:
    return transport or state.transport or http_transport(state.config.notify_timeout_seconds)


def send_once(notification: Notification, transport: Transport) -> dict:
    """POST the notice once; never raises. Returns the attempt record (without attempt_no)."""
    started, mono = time.time(), time.monotonic()
    error = None
    try:
        status, text = transport(notification.url, notification.body.encode("utf-8"))
    except Exception as exc:  # any network failure is a failed attempt, as at WeChat
        status, text, error = 0, "", f"{type(exc).__name__}: {exc}"
    ok = error is None and is_acknowledged(status, text)
    attempt = {
        "notification_id": notification.id,
        "at": wire.beijing(started).isoformat(),
        "ts": started,
        "url": notification.url,
        "status": status,
        "response": (text or "")[:MAX_RESPONSE_CHARS],
        "ok": ok,
        "error": error,
        "duration_ms": int((time.monotonic() - mono) * 1000),
    }
    log.info(
        "notify #%s %s %s -> %s: %s%s",
        notification.id,
        notification.kind,
        notification.out_trade_no,
        notification.url,
        status or "no answer",
        " ok" if ok else f" FAILED {error or ''}".rstrip(),
    )
    return attempt


def deliver_round(notification: Notification, transport: Transport) -> list[dict]:
    """One delivery round: one POST, or two concurrent ones under the ``duplicate`` fault."""
    if not notification.duplicate:
        return [send_once(notification, transport)]
    barrier = threading.Barrier(2)
    results: list[dict] = []
    lock = threading.Lock()

    def worker() -> None:
        try:
            barrier.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass
        attempt = send_once(notification, transport)
        with lock:
            results.append(attempt)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(results, key=lambda a: a["ts"])


def deliver_pending(state: SandboxState, transport: Transport | None = None) -> list[dict]:
    """Send every notice that is neither acknowledged, given up nor in flight once, now, in the
    caller's thread (ignoring the retry schedule and ``late_seconds``); failures still advance
    the retry count. ``transport(url, body) -> (status, text)`` defaults to the state's, else
    HTTP. Returns the attempts in order."""
    state.tick()
    send = _resolve(state, transport)
    attempts: list[dict] = []
    for notification in state.claim_notifications(due_only=False):
        made: list[dict] = []
        try:
            made = deliver_round(notification, send)
        finally:
            state.record_round(notification, made)
        attempts += made
    return attempts


def resend(state: SandboxState, notification_id: int, transport: Transport | None = None) -> list[dict]:
    """Send notice ``notification_id`` once more now, acknowledged or not (WeChat's duplicate
    delivery). The retry schedule is not changed. Raises ``SandboxError`` 404 if unknown."""
    with state.lock:
        notification = state.notifications.get(notification_id)
    if notification is None:
        raise SandboxError(f"unknown notification {notification_id}", 404)
    made = [send_once(notification, _resolve(state, transport))]
    state.record_round(notification, made, scheduled=False)
    return made


class Notifier:
    """Background delivery: sends each notice when due, retrying on the scaled schedule.

    Args:
        state: the sandbox state whose notices are delivered.
        transport: overrides ``state.transport`` / HTTP for this notifier.
        max_workers: concurrent deliveries (a slow shop must not hold up other notices).
    """

    def __init__(self, state: SandboxState, transport: Transport | None = None, max_workers: int = 16) -> None:
        self.state = state
        self.transport = transport
        self.max_workers = max_workers
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._executor: ThreadPoolExecutor | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stopping.clear()
        self._executor = ThreadPoolExecutor(self.max_workers, thread_name_prefix="sandbox-notify")
        self._thread = threading.Thread(target=self._run, name="sandbox-notifier", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop scheduling; deliveries in progress are not waited for beyond ``timeout``."""
        if self._thread is None:
            return
        self._stopping.set()
        with self.state.changed:
            self.state.changed.notify_all()
        self._thread.join(timeout)
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._thread = None

    def _run(self) -> None:
        state = self.state
        while not self._stopping.is_set():
            with state.changed:
                try:
                    state.tick()
                except Exception:  # never let a bad record kill delivery
                    log.exception("sandbox tick failed")
                due = state.claim_notifications(due_only=True)
                if self._v3_due():
                    self._v3_running = True  # one v3 round at a time
                    self._executor.submit(self._deliver_v3)
                if not due:
                    wait = state.seconds_to_next_due()
                    state.changed.wait(1.0 if wait is None else min(max(wait, 0.001), 1.0))
                    continue
            for notification in due:
                try:
                    self._executor.submit(self._deliver, notification)
                except RuntimeError:  # executor shut down while stopping
                    with state.lock:
                        notification.in_flight = False

    def _v3_due(self) -> bool:
        """Pay API v3 notices (pay_v3's queue: payments, refunds, transfers) due now."""
        store = getattr(self.state, "pay_v3", None)
        if store is None or getattr(self, "_v3_running", False):
            return False
        now = time.monotonic()
        return any(n.get("due", 0) <= now for n in store.pending)

    def _deliver_v3(self) -> None:
        from .pay_v3 import deliver

        try:
            deliver(self.state, due_only=True)
        except Exception:  # never let a bad notice kill delivery
            log.exception("sandbox v3 delivery failed")
        finally:
            self._v3_running = False

    def _deliver(self, notification: Notification) -> None:
        made: list[dict] = []
        try:
            made = deliver_round(notification, _resolve(self.state, self.transport))
        finally:
            self.state.record_round(notification, made)
