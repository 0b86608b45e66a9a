"""CLI: ``python -m wechat_sandbox --host 127.0.0.1 --port 8001``.

Flags win over the environment (``WECHAT_APPID``, ``WECHAT_APP_SECRET``, ``WECHAT_MCH_ID``,
``WECHAT_PAY_API_KEY``, ``SANDBOX_RETRY_SCALE``, ``SANDBOX_REFUND_NOTIFY_URL``,
``SANDBOX_MIN_CLOSE_AGE_SECONDS``, ``SANDBOX_REFUND_DELAY_SECONDS``, ``SANDBOX_HOST``,
``SANDBOX_PORT``, else ``WECHAT_SANDBOX_PORT`` as the shop's settings read it), which win
over the demo defaults.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from .config import SandboxConfig
from .server import SandboxServer


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m wechat_sandbox",
        description="Local WeChat Pay V2 + mini-program API sandbox.",
    )
    parser.add_argument("--host", default=os.environ.get("SANDBOX_HOST", "127.0.0.1"))
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("SANDBOX_PORT") or os.environ.get("WECHAT_SANDBOX_PORT") or "8001"),
    )
    parser.add_argument("--appid")
    parser.add_argument("--app-secret")
    parser.add_argument("--mch-id")
    parser.add_argument("--api-key", help="WeChat Pay V2 API key (32 chars)")
    parser.add_argument("--retry-scale", type=float, help="factor on the notification retry schedule (default 1.0)")
    parser.add_argument("--refund-notify-url", help="refund notices go here when the refund request had no notify_url")
    parser.add_argument(
        "--min-close-age",
        type=float,
        dest="min_close_age_seconds",
        help="seconds before closeorder is accepted (WeChat: 300; default 0)",
    )
    parser.add_argument(
        "--refund-delay", type=float, dest="refund_delay_seconds", help="seconds a refund stays PROCESSING (default 0)"
    )
    parser.add_argument(
        "--strict-openid",
        action="store_true",
        default=None,
        help="reject unifiedorder for openids the sandbox never issued",
    )
    parser.add_argument(
        "--robot-key", help="the group-robot webhook key cgi-bin/webhook/send accepts (default: the demo key)"
    )
    parser.add_argument(
        "--no-auto-notify", action="store_true", help="send notices only on POST /sandbox/notifications/deliver"
    )
    parser.add_argument("--log-level", default=os.environ.get("SANDBOX_LOG_LEVEL", "INFO"))
    return parser


def _terminate(signum, frame) -> None:
    """SIGTERM (supervisord, ``make run`` stopping) ends serving like Ctrl-C."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = SandboxConfig.from_env(
            appid=args.appid,
            app_secret=args.app_secret,
            mch_id=args.mch_id,
            api_key=args.api_key,
            retry_scale=args.retry_scale,
            refund_notify_url=args.refund_notify_url,
            min_close_age_seconds=args.min_close_age_seconds,
            refund_delay_seconds=args.refund_delay_seconds,
            strict_openid=args.strict_openid,
            robot_key=args.robot_key,
        )
    except ValueError as exc:
        print(f"wechat sandbox: bad configuration: {exc}", file=sys.stderr)
        return 2
    server = SandboxServer(config, host=args.host, port=args.port, auto_notify=not args.no_auto_notify, quiet=False)
    signal.signal(signal.SIGTERM, _terminate)
    logging.getLogger("wechat_sandbox").info(
        "WeChat sandbox on %s (appid %s, mch_id %s, retry_scale %g, auto_notify %s)",
        server.url,
        config.appid,
        config.mch_id,
        config.retry_scale,
        server.auto_notify,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
