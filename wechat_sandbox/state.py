"""The sandbox's thread-safe in-memory store.

One ``RLock`` guards every record; ``changed`` (a Condition on that lock) wakes the delivery
thread when a notice is queued or answered. Business timestamps come from ``clock`` (epoch
seconds; tests may replace it to jump ahead), notification scheduling from ``time.monotonic``.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable

from . import wire
from .config import SandboxConfig
from .faults import Faults
from .models import LoginCode, Message, Notification, Refund, RobotMessage, Trade, User

#: ``transport(url, body) -> (http_status, response_text)``; raise on network errors.
Transport = Callable[[str, bytes], tuple[int, str]]


class SandboxError(Exception):
    """A control-API request that cannot be honoured; ``status`` is the HTTP status (4xx)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class SandboxState:
    """All sandbox records plus the knobs tests touch directly.

    Args:
        config: credentials and timings (defaults: the demo config).
        clock: ``() -> epoch seconds`` used for codes, tokens, prepay ids, times on the wire.
        transport: default notification transport (None: HTTP POST with ``requests``).
    """

    def __init__(
        self,
        config: SandboxConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        transport: Transport | None = None,
    ) -> None:
        self._initial = (dataclasses.replace(config or SandboxConfig()), clock, transport)
        self._initial[0].validate()
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.faults = Faults()
        self.reset()

    def reset(self) -> None:
        """Forget every user, code, token, trade, refund, notice, message and fault, and put
        back the config, clock and transport given to the constructor (tests may change those
        attributes; a per-test reset must not let that leak into the next test)."""
        with self.lock:
            config, self.clock, self.transport = self._initial
            self.config: SandboxConfig = dataclasses.replace(config)
            self.users: dict[str, User] = {}
            self.login_codes: dict[str, LoginCode] = {}
            self.access_tokens: dict[str, float] = {}  # token -> expires_at
            self.trades: dict[str, Trade] = {}  # by out_trade_no
            self.trades_by_transaction: dict[str, Trade] = {}
            self.refunds: dict[str, Refund] = {}  # by out_refund_no, in creation order
            self.notifications: dict[int, Notification] = {}
            self.messages: list[Message] = []
            self.robot_messages: list[RobotMessage] = []  # accepted group-robot messages (robot.py)
            self.api_calls: collections.Counter[str] = collections.Counter()  # e.g. "pay/orderquery"
            self._next_notification_id = 1
            self._next_msgid = 2_000_000_000_000_000_001
            self._next_robot_id = 1
            self.faults.clear()
            self.logistics = {"down": False, "queries": 0}  # the tracking sandbox (logistics.py)
            # state of the modules added later (official.py, sms.py, phone.py), each under its name
            self.extras: dict[str, object] = {}
            self.pay_v3 = None  # Pay API v3 transfer bills and codes (pay_v3.py), made on first use
            self.changed.notify_all()

    # --- users, login codes, access tokens, messages ------------------------------------------

    def upsert_user(
        self,
        openid: str | None = None,
        *,
        nickname: str | None = None,
        unionid: str | None = None,
        blocked: bool | None = None,
        refuse_messages: bool | None = None,
    ) -> User:
        """Create a user (openid generated if not given) or update the given fields of one."""
        with self.lock:
            user = self.users.get(openid) if openid else None
            if user is None:
                user = User(openid=openid or wire.new_openid(), created_at=self.clock())
                self.users[user.openid] = user
            if nickname is not None:
                user.nickname = nickname
            if unionid is not None:
                user.unionid = unionid or None
            if blocked is not None:
                user.blocked = bool(blocked)
            if refuse_messages is not None:
                user.refuse_messages = bool(refuse_messages)
            return user

    def issue_login_code(self, openid: str | None = None) -> LoginCode:
        """A single-use ``wx.login`` code for ``openid`` (user created if needed)."""
        with self.lock:
            user = self.upsert_user(openid)
            code = LoginCode(
                code=wire.nonce_str(32),
                openid=user.openid,
                expires_at=self.clock() + self.config.login_code_ttl_seconds,
            )
            self.login_codes[code.code] = code
            return code

    def issue_access_token(self) -> tuple[str, int]:
        """A new access token and its life in seconds; earlier tokens stay valid until expiry."""
        with self.lock:
            token = wire.nonce_str(32) + "_" + wire.nonce_str(64)
            ttl = self.config.access_token_ttl_seconds
            self.access_tokens[token] = self.clock() + ttl
            return token, ttl

    def token_status(self, token: str) -> str:
        """``"ok"``, ``"expired"`` or ``"invalid"``."""
        with self.lock:
            expires_at = self.access_tokens.get(token)
            if expires_at is None:
                return "invalid"
            return "ok" if self.clock() < expires_at else "expired"

    def record_message(self, touser: str, template_id: str, page: str | None, data: dict, extra: dict) -> Message:
        with self.lock:
            message = Message(
                msgid=self._next_msgid,
                touser=touser,
                template_id=template_id,
                page=page,
                data=data,
                sent_at=self.clock(),
                extra=extra,
            )
            self._next_msgid += 1
            self.messages.append(message)
            return message

    def record_robot_message(self, key: str, msgtype: str, content: str, mentions: dict) -> RobotMessage | None:
        """Keep an accepted group-robot message; None (nothing kept) when the robot already sent
        ``config.robot_per_minute`` messages in the last 60 seconds (WeCom: errcode 45009)."""
        with self.lock:
            now = self.clock()
            recent = sum(1 for m in self.robot_messages if m.key == key and m.sent_at > now - 60)
            if recent >= self.config.robot_per_minute:
                return None
            message = RobotMessage(
                id=self._next_robot_id, key=key, msgtype=msgtype, content=content, sent_at=now, mentions=mentions
            )
            self._next_robot_id += 1
            self.robot_messages.append(message)
            return message

    # --- trades ---------------------------------------------------------------------------------

    def find_trade(self, out_trade_no: str | None = None, transaction_id: str | None = None) -> Trade | None:
        """By transaction_id first (as WeChat), else by out_trade_no."""
        with self.lock:
            if transaction_id:
                return self.trades_by_transaction.get(transaction_id)
            if out_trade_no:
                return self.trades.get(out_trade_no)
            return None

    def refunds_of(self, out_trade_no: str) -> list[Refund]:
        with self.lock:
            return [r for r in self.refunds.values() if r.out_trade_no == out_trade_no]

    def tick(self) -> None:
        """Apply what time has made due (refunds leaving PROCESSING). Called on every request
        and by the delivery thread."""
        from .trades import settle_due_refunds

        settle_due_refunds(self)

    # --- notifications --------------------------------------------------------------------------

    def queue_notification(
        self, kind: str, url: str, body: str, out_trade_no: str, out_refund_no: str | None = None
    ) -> Notification:
        """Queue a notice for delivery; takes the ``notify`` / ``refund_notify`` fault."""
        fault = self.faults.take("notify" if kind == "payment" else "refund_notify") or {}
        with self.lock:
            notification = Notification(
                id=self._next_notification_id,
                kind=kind,
                url=url,
                body=body,
                out_trade_no=out_trade_no,
                out_refund_no=out_refund_no,
                created_at=self.clock(),
                due_at=time.monotonic() + float(fault.get("late_seconds") or 0),
                duplicate=bool(fault.get("duplicate")),
            )
            self._next_notification_id += 1
            self.notifications[notification.id] = notification
            self.changed.notify_all()
            return notification

    def claim_notifications(self, due_only: bool = True) -> list[Notification]:
        """Mark as in flight, and return, the notices to send now: not acknowledged, not given
        up, not already in flight, and (if ``due_only``) due by the retry schedule."""
        now = time.monotonic()
        with self.lock:
            claimed = [
                n
                for n in self.notifications.values()
                if not (n.acknowledged or n.gave_up or n.in_flight) and (not due_only or n.due_at <= now)
            ]
            for n in claimed:
                n.in_flight = True
            return claimed

    def record_round(self, notification: Notification, attempts: list[dict], scheduled: bool = True) -> None:
        """Store one delivery round (1 attempt, 2 with ``duplicate``) and schedule what follows:
        acknowledged if any attempt was; else the next attempt after the scaled wait, or give up
        after the last one. ``scheduled=False`` (a manual resend) leaves the schedule and the
        in-flight mark alone."""
        with self.lock:
            for attempt in attempts:
                attempt["attempt_no"] = len(notification.attempts) + 1
                notification.attempts.append(attempt)
            if scheduled:
                notification.in_flight = False
            if any(a["ok"] for a in attempts):
                notification.acknowledged = True
            elif scheduled and not notification.acknowledged:
                delays = self.config.retry_delays()
                if notification.failed_rounds >= len(delays):
                    notification.gave_up = True
                else:
                    notification.due_at = time.monotonic() + delays[notification.failed_rounds]
                notification.failed_rounds += 1
            self.changed.notify_all()

    def seconds_to_next_due(self) -> float | None:
        """Seconds until the earliest pending notice or PROCESSING refund is due (None: none)."""
        now_mono, now = time.monotonic(), self.clock()
        with self.lock:
            waits = [
                n.due_at - now_mono
                for n in self.notifications.values()
                if not (n.acknowledged or n.gave_up or n.in_flight)
            ]
            waits += [r.settle_at - now for r in self.refunds.values() if r.status == "PROCESSING"]
            return max(0.0, min(waits)) if waits else None

    def deliver_pending(self, transport: Transport | None = None) -> list[dict]:
        """Send every unacknowledged (and not given-up) notice once, now, in this thread,
        ignoring the retry schedule; returns the attempts. See ``notifier.deliver_pending``."""
        from .notifier import deliver_pending

        return deliver_pending(self, transport)

    def resend(self, notification_id: int, transport: Transport | None = None) -> list[dict]:
        """Send notice ``notification_id`` again now (even if acknowledged), like WeChat's
        duplicate delivery; returns the attempts. Raises ``SandboxError`` (404) if unknown."""
        from .notifier import resend

        return resend(self, notification_id, transport)
