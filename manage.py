#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")
    if not os.environ.get("REDIS_URL"):
        # No Redis configured: make sure the embedded one (var/redis.sock) answers.
        from starmall import embedded_redis

        embedded_redis.ensure_running()
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:  # bad configuration: say what, without a traceback
        sys.exit(f"Starmall configuration error: {exc}")


if __name__ == "__main__":
    main()
