#!/usr/bin/env python
"""Django's command-line utility for administrative tasks (what it makes sure of: starmall/oneoff.py)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")
    from django.core.exceptions import ImproperlyConfigured

    from starmall import oneoff

    try:
        # Refuses a command the database is not set up for; runs the embedded Redis (no
        # REDIS_URL) only for the command's length unless the shop's already answers.
        oneoff.run(sys.argv)
    except ImproperlyConfigured as exc:  # bad configuration: say what, without a traceback
        sys.exit(f"Starmall configuration error: {exc}")


if __name__ == "__main__":
    main()
