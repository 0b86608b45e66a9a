"""The shape of one kind of export: its columns (a header and how to read the cell from one object)
and the objects it lists for a Shanghai date range (``apps.backoffice.exports`` streams them)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet


@dataclass(frozen=True)
class Export:
    """``columns``: (header, the cell's value from one object); ``objects(lo, hi, start, end)``:
    what it lists, ``[lo, hi)`` aware Shanghai bounds of the days ``start``..``end``."""

    columns: tuple[tuple[str, Callable[[Any], Any]], ...]
    objects: Callable[[dt.datetime, dt.datetime, dt.date, dt.date], QuerySet]


def yes(value: bool) -> str:
    """A flag as staff read it in a spreadsheet."""
    return "是" if value else "否"
