"""Argument helpers shared by the management commands."""

import datetime as dt

from django.core.management.base import CommandError


def iso_date(text: str) -> dt.date:
    """``YYYY-MM-DD`` -> date; anything else is a CommandError naming the bad value."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise CommandError(f"not a date (YYYY-MM-DD): {text!r}") from exc
