"""An Excel (.xlsx) file streamed row by row: the zip is built on the fly (``stream-zip``), the sheet's
XML written as the rows come, so the first bytes leave before the last row is read and memory stays flat.

Cells follow the exports' rules (:mod:`starmall.spreadsheet`): text is an inline string (``t="inlineStr"``,
never a formula) through :func:`~starmall.spreadsheet.safe_text`, without the characters XML 1.0 cannot
hold; ``None`` and ``""`` are cells left out (truly empty); a ``Decimal`` (yuan) is a number shown ``0.00``,
an ``int``/``float`` a number, a ``bool`` a boolean; a datetime an Excel serial number in Beijing time
shown ``yyyy-mm-dd hh:mm``, a date one shown ``yyyy-mm-dd``. A sheet holds at most :data:`MAX_ROWS` rows
(Excel's limit); more go on to further sheets, "订单 (2)" and so on, each starting with the header again.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import zlib
from collections.abc import Iterable, Iterator
from decimal import Decimal
from itertools import chain, islice

from starmall.spreadsheet import SHANGHAI, beijing_naive, safe_text

MAX_ROWS = 1_048_576  # Excel's rows per sheet, the header included
CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_BATCH = 64 * 1024  # characters of sheet XML handed to the zip at a time
_EPOCH = dt.datetime(1899, 12, 30)  # Excel's day 0 (1900 system, past the 1900-02-29 bug)
_DAY_SECONDS = 86400
#: characters an XML 1.0 document cannot hold (C0 controls but tab/LF/CR, lone surrogates, U+FFFE/F)
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_SHEET_NAME_BAD = re.compile(r"[\[\]:*?/\\]")

# cellXfs indexes in _STYLES: 0 general, 1 yuan (built-in format 2 "0.00"), 2 date-time, 3 date
_YUAN, _DATETIME, _DATE = 1, 2, 3
_STYLES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    '<numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy-mm-dd hh:mm"/>'
    '<numFmt numFmtId="165" formatCode="yyyy-mm-dd"/></numFmts>'
    '<fonts count="1"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill>'
    '<fill><patternFill patternType="gray125"/></fill></fills>'
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
    '<xf numFmtId="2" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs>'
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
)
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOC_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_SHEET_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
_ROOT_RELS = (
    f'{_XML}<Relationships xmlns="{_PKG_RELS}"><Relationship Id="rId1" '
    f'Type="{_DOC_RELS}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
)


def _escape(text: str) -> str:
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _attribute(text: str) -> str:
    return _escape(text).replace('"', "&quot;")


def _column(index: int) -> str:
    """0 -> "A", 25 -> "Z", 26 -> "AA"."""
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(65 + rest) + name
    return name


def _serial(value: dt.date) -> str:
    """An Excel serial day number (fraction: the time of day) for a date or naive datetime."""
    if isinstance(value, dt.datetime):
        delta = value - _EPOCH
        return repr(delta.days + (delta.seconds + delta.microseconds / 1e6) / _DAY_SECONDS)
    return str((value - _EPOCH.date()).days)


def cell_xml(ref: str, value) -> str:
    """One ``<c>`` element for ``value`` at ``ref`` ("B7"), typed as the module says; "" (no
    element: an empty cell) for ``None`` and ``""`` and text with nothing left once cleaned."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = safe_text(_ILLEGAL.sub("", value))
        if not text:
            return ""
        space = ' xml:space="preserve"' if text[0].isspace() or text[-1].isspace() else ""
        return f'<c r="{ref}" t="inlineStr"><is><t{space}>{_escape(text)}</t></is></c>'
    if isinstance(value, bool):
        return f'<c r="{ref}" t="b"><v>{int(value)}</v></c>'
    if isinstance(value, Decimal):
        return f'<c r="{ref}" s="{_YUAN}"><v>{value:f}</v></c>' if value.is_finite() else ""
    if isinstance(value, int):
        return f'<c r="{ref}"><v>{value}</v></c>'
    if isinstance(value, float):
        return f'<c r="{ref}"><v>{value!r}</v></c>' if math.isfinite(value) else ""
    if isinstance(value, dt.datetime):
        return f'<c r="{ref}" s="{_DATETIME}"><v>{_serial(beijing_naive(value))}</v></c>'
    if isinstance(value, dt.date):
        return f'<c r="{ref}" s="{_DATE}"><v>{_serial(value)}</v></c>'
    return cell_xml(ref, str(value))


def _sheet(rows: Iterable[list]) -> Iterator[bytes]:
    """The XML of one worksheet holding ``rows``, encoded in batches of about :data:`_BATCH` characters."""
    columns: list[str] = []
    parts = [f'{_XML}<worksheet xmlns="{_MAIN}"><sheetData>']
    size = 0
    for number, row in enumerate(rows, start=1):
        while len(columns) < len(row):
            columns.append(_column(len(columns)))
        line = "".join(cell_xml(f"{columns[i]}{number}", value) for i, value in enumerate(row))
        parts.append(f'<row r="{number}">{line}</row>')
        size += len(line)
        if size >= _BATCH:
            yield "".join(parts).encode()
            parts, size = [], 0
    parts.append("</sheetData></worksheet>")
    yield "".join(parts).encode()


def _sheet_title(title: str, number: int) -> str:
    """The n-th sheet's name: ``title``, then "title (2)"…; within Excel's 31 characters and
    without the characters Excel refuses in a sheet name."""
    title = _SHEET_NAME_BAD.sub("_", title).strip("'") or "Sheet"
    suffix = "" if number == 1 else f" ({number})"
    return title[: 31 - len(suffix)] + suffix


def _workbook_parts(titles: list[str]) -> Iterator[tuple[str, str]]:
    """(name, XML) of the parts listing the sheets: the workbook, its relationships, the content types."""
    sheets = "".join(
        f'<sheet name="{_attribute(title)}" sheetId="{n}" r:id="rId{n}"/>' for n, title in enumerate(titles, 1)
    )
    yield (
        "xl/workbook.xml",
        f'{_XML}<workbook xmlns="{_MAIN}" xmlns:r="{_DOC_RELS}"><sheets>{sheets}</sheets></workbook>',
    )
    rels = "".join(
        f'<Relationship Id="rId{n}" Type="{_DOC_RELS}/worksheet" Target="worksheets/sheet{n}.xml"/>'
        for n in range(1, len(titles) + 1)
    )
    styles = f'<Relationship Id="rId{len(titles) + 1}" Type="{_DOC_RELS}/styles" Target="styles.xml"/>'
    yield "xl/_rels/workbook.xml.rels", f'{_XML}<Relationships xmlns="{_PKG_RELS}">{rels}{styles}</Relationships>'
    overrides = "".join(
        f'<Override PartName="/xl/worksheets/sheet{n}.xml" ContentType="{_SHEET_TYPE}"/>'
        for n in range(1, len(titles) + 1)
    )
    ooxml = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    yield (
        "[Content_Types].xml",
        (
            f'{_XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{ooxml}.sheet.main+xml"/>'
            f'<Override PartName="/xl/styles.xml" ContentType="{ooxml}.styles+xml"/>{overrides}</Types>'
        ),
    )


def xlsx_chunks(source: Iterable[list], title: str, modified: dt.datetime | None = None) -> Iterator[bytes]:
    """The bytes of an .xlsx file holding ``source`` (the header, then one list per row) on a sheet
    named ``title``, as it is read: a generator, nothing is done before the first ``next()``.
    ``modified``: the zip entries' naive time (default: now, Beijing). The zip is ZIP32 (Excel refuses
    the ZIP64 a stream would write): past 4 GiB of one sheet's XML or of the file, stream-zip raises
    and the download stops short."""
    # A sheet of Excel's MAX_ROWS stays under ZIP32's 4 GiB unless a row's XML passes 4 KB.
    from stream_zip import ZIP_32, stream_zip

    modified = (modified or dt.datetime.now(SHANGHAI).replace(tzinfo=None)).replace(microsecond=0)
    rows = iter(source)
    header = next(rows, [])
    titles: list[str] = []

    def members():
        nonlocal rows
        yield "_rels/.rels", modified, 0o600, ZIP_32, (_ROOT_RELS.encode(),)
        yield "xl/styles.xml", modified, 0o600, ZIP_32, (_STYLES.encode(),)
        while True:
            titles.append(_sheet_title(title, len(titles) + 1))
            sheet = chain([header], islice(rows, MAX_ROWS - 1))
            yield f"xl/worksheets/sheet{len(titles)}.xml", modified, 0o600, ZIP_32, _sheet(sheet)
            more = next(rows, None)
            if more is None:
                break
            rows = chain([more], rows)
        for name, xml in _workbook_parts(titles):
            yield name, modified, 0o600, ZIP_32, (xml.encode(),)

    return stream_zip(
        members(),
        get_compressobj=lambda: zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS),
        extended_timestamps=False,
    )
