"""A faithful local emulator of WeChat Pay V2 and the mini-program server APIs.

Its own process (``python -m wechat_sandbox``) or a background thread in tests
(:class:`SandboxServer`); the shop reaches it only through wechatpy over HTTP. No Django here.
See README.md in this package for endpoints, the control API and what is simplified.
"""

from .client import SandboxControl, SandboxControlError
from .config import (
    DEMO_APP_SECRET,
    DEMO_APPID,
    DEMO_MCH_ID,
    DEMO_PAY_API_KEY,
    DEMO_ROBOT_KEY,
    RETRY_SCHEDULE_SECONDS,
    SandboxConfig,
)
from .server import SandboxServer
from .state import SandboxError, SandboxState

__all__ = [
    "DEMO_APPID",
    "DEMO_APP_SECRET",
    "DEMO_MCH_ID",
    "DEMO_PAY_API_KEY",
    "DEMO_ROBOT_KEY",
    "RETRY_SCHEDULE_SECONDS",
    "SandboxConfig",
    "SandboxControl",
    "SandboxControlError",
    "SandboxError",
    "SandboxServer",
    "SandboxState",
]
