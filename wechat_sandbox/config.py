"""Sandbox configuration: merchant credentials, timings and switches.

The defaults are Starmall's demo credentials, so a shop started with its own defaults talks to
a sandbox started with no flags at all.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

DEMO_APPID = "wx8d5f3c1a2b4e6f70"
DEMO_APP_SECRET = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
DEMO_MCH_ID = "1900000109"
DEMO_PAY_API_KEY = "starmall0sandbox0pay0api0key0032"
#: The enterprise-WeChat (WeCom) group robot's webhook key the shop's development settings use
#: (``ALERT_WECOM_WEBHOOK_URL``); real keys have this UUID shape.
DEMO_ROBOT_KEY = "5a7c0e1d-2b3f-4c5d-8e9f-0a1b2c3d4e5f"

#: WeChat Pay's re-send schedule for an unacknowledged notification, in seconds: the wait after
#: the 1st, 2nd, ... failed attempt (15 s, 15 s, 30 s, 3 m, 10 m, 20 m, 30 m x3, 60 m, 3 h x3,
#: 6 h x2; about 24 h in all). After the last wait and one more failure WeChat gives up, so a
#: notification gets at most ``len(RETRY_SCHEDULE_SECONDS) + 1`` = 16 attempts.
RETRY_SCHEDULE_SECONDS: tuple[int, ...] = (
    15,
    15,
    30,
    180,
    600,
    1200,
    1800,
    1800,
    1800,
    3600,
    10800,
    10800,
    10800,
    21600,
    21600,
)


@dataclass
class SandboxConfig:
    """Everything the sandbox needs to know; all fields have working demo defaults.

    Attributes:
        appid / app_secret: the mini-program's credentials (``jscode2session``, ``cgi-bin/token``).
        mch_id / api_key: the merchant number and the 32-char Pay V2 API key used for signing and
            for the refund notification's AES key.
        retry_scale: factor applied to ``RETRY_SCHEDULE_SECONDS`` (tests use e.g. 0.001).
        notify_timeout_seconds: how long a notification waits for the shop's answer (WeChat: 5 s).
        login_code_ttl_seconds: life of a ``wx.login`` code (WeChat: about 5 minutes).
        access_token_ttl_seconds: life of a ``cgi-bin/token`` access token (WeChat: 7200 s).
        prepay_ttl_seconds: life of a prepay_id (WeChat: 2 hours).
        min_close_age_seconds: minimum order age before ``closeorder`` is accepted. Real WeChat
            asks for 5 minutes (300); the default 0 lets tests close at once.
        refund_delay_seconds: time a refund stays PROCESSING before it turns SUCCESS and its
            notification is queued (0: at once, within the refund call).
        refund_notify_url: where refund notifications go when the refund request had no
            ``notify_url`` (WeChat uses the URL configured in the merchant platform); empty: none.
        known_templates: subscription-message template ids accepted by ``subscribe/send``;
            ``None`` accepts any non-empty id.
        strict_openid: if True, ``unifiedorder`` with an openid the sandbox never issued fails
            (as WeChat does for an openid of another appid); if False (default) the openid is
            registered as a new user, so tests need not log in first.
        bank_type: the ``bank_type`` reported for payments (WeChat: e.g. ``OTHERS``, ``CMB_DEBIT``).
        robot_key: the one group-robot webhook key ``cgi-bin/webhook/send`` accepts (others:
            errcode 93000, as WeCom answers a deleted or mistyped robot).
        robot_per_minute: messages one robot may send per minute (WeCom: 20; more: errcode 45009).
    """

    appid: str = DEMO_APPID
    app_secret: str = DEMO_APP_SECRET
    mch_id: str = DEMO_MCH_ID
    api_key: str = DEMO_PAY_API_KEY
    retry_scale: float = 1.0
    notify_timeout_seconds: float = 5.0
    login_code_ttl_seconds: float = 300.0
    access_token_ttl_seconds: int = 7200
    prepay_ttl_seconds: float = 7200.0
    min_close_age_seconds: float = 0.0
    refund_delay_seconds: float = 0.0
    refund_notify_url: str = ""
    known_templates: frozenset[str] | None = None
    strict_openid: bool = False
    bank_type: str = "OTHERS"
    robot_key: str = DEMO_ROBOT_KEY
    robot_per_minute: int = 20
    retry_schedule_seconds: tuple[int, ...] = field(default=RETRY_SCHEDULE_SECONDS)

    def retry_delays(self) -> list[float]:
        """The scaled waits (seconds) after each failed notification attempt."""
        return [s * self.retry_scale for s in self.retry_schedule_seconds]

    def to_dict(self) -> dict:
        """JSON-friendly view (the sandbox's keys are demo keys, so they are shown)."""
        data = dataclasses.asdict(self)
        data["known_templates"] = sorted(self.known_templates) if self.known_templates is not None else None
        data["retry_schedule_seconds"] = list(self.retry_schedule_seconds)
        return data

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides) -> SandboxConfig:
        """Build a config from ``WECHAT_APPID``, ``WECHAT_APP_SECRET``, ``WECHAT_MCH_ID``,
        ``WECHAT_PAY_API_KEY``, ``SANDBOX_RETRY_SCALE``, ``SANDBOX_REFUND_NOTIFY_URL``,
        ``SANDBOX_MIN_CLOSE_AGE_SECONDS``, ``SANDBOX_REFUND_DELAY_SECONDS`` and ``SANDBOX_ROBOT_KEY``; unset or empty
        variables keep the defaults, ``overrides`` (non-None values) win over both."""
        env = os.environ if environ is None else environ
        values: dict = {}
        for name, var, conv in (
            ("appid", "WECHAT_APPID", str),
            ("app_secret", "WECHAT_APP_SECRET", str),
            ("mch_id", "WECHAT_MCH_ID", str),
            ("api_key", "WECHAT_PAY_API_KEY", str),
            ("retry_scale", "SANDBOX_RETRY_SCALE", float),
            ("refund_notify_url", "SANDBOX_REFUND_NOTIFY_URL", str),
            ("min_close_age_seconds", "SANDBOX_MIN_CLOSE_AGE_SECONDS", float),
            ("refund_delay_seconds", "SANDBOX_REFUND_DELAY_SECONDS", float),
            ("robot_key", "SANDBOX_ROBOT_KEY", str),
        ):
            raw = env.get(var, "")
            if raw.strip():
                values[name] = conv(raw.strip())
        values.update({k: v for k, v in overrides.items() if v is not None})
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        """Raise ``ValueError`` for a config the sandbox cannot honour."""
        if len(self.api_key) != 32:
            raise ValueError("api_key must be 32 characters (a WeChat Pay V2 API key)")
        if self.retry_scale < 0:
            raise ValueError("retry_scale must be >= 0")
        if not (self.appid and self.mch_id and self.app_secret):
            raise ValueError("appid, app_secret and mch_id must be set")
        if not self.robot_key or self.robot_per_minute < 1:
            raise ValueError("robot_key must be set and robot_per_minute at least 1")
