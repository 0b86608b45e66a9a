"""Loading the almanac: lunar-python (``compute.py``) -> ``AlmanacDay`` + index + ranges.

:func:`almanac_load` fills any range of 1901-01-01..2100-12-31 one calendar year (a chunk) at a
time, each chunk one transaction (delete its index rows and days, insert them again, update the
loaded ranges); after the last chunk the API cache starts a new generation. A rerun rewrites the
same rows, a crash leaves whole years loaded or not, and a live shop on SQLite waits for the write
lock a fraction of a second per year. A chunk already loaded with the pinned source/version/sect is
skipped unless ``force``. A day costs about 0.6 ms of pure Python, so big ranges are computed in
worker processes (spawned, importing only ``compute.py``) while this process writes.
"""

from __future__ import annotations

import datetime as dt
import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from apps.almanac import caching, compute, synonyms
from apps.almanac.models import AlmanacActivity, AlmanacDay, AlmanacRange

logger = logging.getLogger(__name__)

# Below this many days to compute, starting worker processes costs more than it saves.
PARALLEL_MIN_DAYS = 1500
ANALYZE_MIN_DAYS = 1000  # after loading this many days, refresh PostgreSQL's statistics
INSERT_BATCH = 2000  # AlmanacDay rows per INSERT statement
_INDEX_ROWS_PER_INSERT = 300
_ADVISORY_LOCK_KEY = 0x616C6D616E6163  # "almanac": one loader writes at a time on PostgreSQL


class InvalidRange(ValueError):
    """The asked range is empty or outside 1901-01-01..2100-12-31."""


@dataclass(frozen=True)
class LoadResult:
    start: dt.date
    end: dt.date
    days_loaded: int  # days (re)written
    days_skipped: int  # days already loaded with the pinned version (not rewritten)
    index_rows: int  # AlmanacActivity rows written
    seconds: float  # wall time
    source: str
    version: str
    sect: int


def _chunks(start: dt.date, end: dt.date) -> list[tuple[dt.date, dt.date]]:
    """[start, end] cut at calendar-year boundaries."""
    out = []
    year = start.year
    while year <= end.year:
        out.append((max(start, dt.date(year, 1, 1)), min(end, dt.date(year, 12, 31))))
        year += 1
    return out


def _covered(chunk: tuple[dt.date, dt.date], ranges: list[AlmanacRange]) -> bool:
    """True when one range loaded with the pinned source/version/sect contains ``chunk``."""
    return any(
        r.start <= chunk[0]
        and chunk[1] <= r.end
        and (r.source, r.source_version, r.sect) == (compute.SOURCE, compute.PINNED_VERSION, compute.SECT)
        for r in ranges
    )


def _day_row(f: compute.DayFacts) -> AlmanacDay:
    return AlmanacDay(
        date=f.date,
        lunar_year=f.lunar_year,
        lunar_month=f.lunar_month,
        lunar_day=f.lunar_day,
        is_leap=f.is_leap,
        lunar_month_text=f.lunar_month_text,
        lunar_day_text=f.lunar_day_text,
        lunar_text=f.lunar_text,
        year_ganzhi=f.year_ganzhi,
        year_ganzhi_lichun=f.year_ganzhi_lichun,
        month_ganzhi=f.month_ganzhi,
        day_ganzhi=f.day_ganzhi,
        zodiac=f.zodiac,
        solar_term=f.solar_term,
        solar_term_at=f.solar_term_at,
        yi=list(f.yi),
        ji=list(f.ji),
        chong_zodiac=f.chong_zodiac,
        chong_ganzhi=f.chong_ganzhi,
        sha=f.sha,
        pengzu_gan=f.pengzu_gan,
        pengzu_zhi=f.pengzu_zhi,
        zhishen=f.zhishen,
        zhishen_type=f.zhishen_type,
        jianchu=f.jianchu,
        jishen=list(f.jishen),
        xiongsha=list(f.xiongsha),
        festivals=list(f.festivals),
        source=compute.SOURCE,
        source_version=compute.PINNED_VERSION,
        sect=compute.SECT,
    )


def _index_rows(f: compute.DayFacts) -> Iterator[tuple[dt.date, str, str]]:
    """The day's index rows ``(date, kind, term)``; markers (馀事勿取 ...) are not activities."""
    for kind, terms in ((AlmanacActivity.Kind.YI, f.yi), (AlmanacActivity.Kind.JI, f.ji)):
        for term in dict.fromkeys(terms):  # unique, in order
            if term not in synonyms.MARKERS:
                yield f.date, kind.value, term


def _insert_index(rows: list[tuple[dt.date, str, str]]) -> None:
    """Multi-row INSERTs of index rows (caller's transaction).

    About 1.1 million rows for the full range: building a model instance per row, as
    ``bulk_create`` does, would double the load time, so this writes plain tuples with
    ``INSERT ... VALUES (..), (..), ...`` — portable SQL, 300 rows (900 parameters, under
    SQLite's oldest limit of 999) per statement.
    """
    opts = AlmanacActivity._meta
    q = connection.ops.quote_name
    columns = ", ".join(q(opts.get_field(name).column) for name in ("day", "kind", "term"))
    head = f"INSERT INTO {q(opts.db_table)} ({columns}) VALUES "
    adapt = connection.ops.adapt_datefield_value
    with connection.cursor() as cursor:
        for i in range(0, len(rows), _INDEX_ROWS_PER_INSERT):
            batch = rows[i : i + _INDEX_ROWS_PER_INSERT]
            params = [v for date, kind, term in batch for v in (adapt(date), kind, term)]
            cursor.execute(head + ", ".join(["(%s, %s, %s)"] * len(batch)), params)


def _lock_loader() -> None:
    """Serialize loaders (caller's transaction). SQLite already does: BEGIN IMMEDIATE."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_ADVISORY_LOCK_KEY])


def _ranges_replace(start: dt.date, end: dt.date, now: dt.datetime) -> None:
    """Record [start, end] as loaded with the pinned version; keep ranges merged.

    Caller holds the loader lock. Older ranges lose the overlapped part (they may come from
    another version); neighbours with the same source/version/sect are merged into one row.
    """
    one = dt.timedelta(days=1)
    current = (compute.SOURCE, compute.PINNED_VERSION, compute.SECT)
    pieces: list[tuple[dt.date, dt.date, tuple, dt.datetime]] = []
    for r in AlmanacRange.objects.all():
        key = (r.source, r.source_version, r.sect)
        if r.end < start or r.start > end:
            pieces.append((r.start, r.end, key, r.loaded_at))
            continue
        if r.start < start:
            pieces.append((r.start, start - one, key, r.loaded_at))
        if r.end > end:
            pieces.append((end + one, r.end, key, r.loaded_at))
    pieces.append((start, end, current, now))
    pieces.sort(key=lambda p: p[0])
    merged: list[list] = []
    for p_start, p_end, key, loaded_at in pieces:
        if merged and merged[-1][2] == key and p_start <= merged[-1][1] + one:
            merged[-1][1] = max(merged[-1][1], p_end)
            merged[-1][3] = max(merged[-1][3], loaded_at)
        else:
            merged.append([p_start, p_end, key, loaded_at])
    AlmanacRange.objects.all().delete()
    AlmanacRange.objects.bulk_create(
        AlmanacRange(start=s, end=e, source=k[0], source_version=k[1], sect=k[2], loaded_at=at)
        for s, e, k, at in merged
    )


def _write_chunk(facts: list[compute.DayFacts]) -> int:
    """Replace the chunk's days and index rows in one transaction; return index rows written."""
    start, end = facts[0].date, facts[-1].date
    rows = [row for f in facts for row in _index_rows(f)]
    with transaction.atomic():
        _lock_loader()
        # Index rows first: AlmanacActivity -> AlmanacDay is DO_NOTHING (no Python cascade).
        AlmanacActivity.objects.filter(day__gte=start, day__lte=end).delete()
        AlmanacDay.objects.filter(date__range=(start, end)).delete()
        AlmanacDay.objects.bulk_create([_day_row(f) for f in facts], batch_size=INSERT_BATCH)
        _insert_index(rows)
        _ranges_replace(start, end, timezone.now())
    return len(rows)


def _analyze() -> None:
    """Refresh planner statistics after a big load (PostgreSQL; autovacuum would lag behind)."""
    if connection.vendor == "postgresql":
        tables = ", ".join(connection.ops.quote_name(m._meta.db_table) for m in (AlmanacDay, AlmanacActivity))
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {tables}")


def _compute_chunks(chunks: list[tuple[dt.date, dt.date]], workers: int) -> Iterator[list[compute.DayFacts]]:
    """Facts of each chunk, in order; computed ahead in ``workers`` processes when > 1."""
    if workers <= 1:
        for start, end in chunks:
            yield compute.days_between(start, end)
        return
    # spawn: the workers import compute.py only (no Django, no inherited DB connection).
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        yield from pool.map(compute.days_between, [c[0] for c in chunks], [c[1] for c in chunks])


def almanac_load(
    *,
    start: dt.date = compute.FIRST_DATE,
    end: dt.date = compute.LAST_DATE,
    force: bool = False,
    workers: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> LoadResult:
    """Load (or reload) the almanac for ``start``..``end`` inclusive; safe to rerun.

    Years already loaded with the pinned source/version/sect are skipped unless ``force``.
    ``workers``: processes that compute days (default: the CPU count, at most 4, and 1 for
    fewer than PARALLEL_MIN_DAYS days). ``progress(n)`` is called with each chunk's day count.
    Raises ``compute.SourceVersionMismatch`` when the installed lunar-python is not the pinned
    version (nothing is written) and InvalidRange for an empty or unsupported range.
    """
    began = time.monotonic()
    version = compute.check_version()
    if start > end:
        raise InvalidRange(f"start {start} is after end {end}")
    if start < compute.FIRST_DATE or end > compute.LAST_DATE:
        raise InvalidRange(f"the almanac covers {compute.FIRST_DATE}..{compute.LAST_DATE}; asked {start}..{end}")
    chunks = _chunks(start, end)
    ranges = list(AlmanacRange.objects.all())
    todo = [c for c in chunks if force or not _covered(c, ranges)]
    skipped = sum((c[1] - c[0]).days + 1 for c in chunks if c not in todo)
    if progress and skipped:
        progress(skipped)
    days_todo = sum((c[1] - c[0]).days + 1 for c in todo)
    if workers is None:
        workers = min(os.cpu_count() or 1, 4)
    if days_todo < PARALLEL_MIN_DAYS:
        workers = 1
    index_rows = days_written = 0
    try:
        for facts in _compute_chunks(todo, workers):
            index_rows += _write_chunk(facts)
            days_written += len(facts)
            if progress:
                progress(len(facts))
    finally:
        if days_written:
            # Cached answers may predate what was just committed (even if a later chunk
            # failed): start a new generation once, after the chunks' commits.
            caching.bump()
    if days_written >= ANALYZE_MIN_DAYS:
        _analyze()
    result = LoadResult(
        start=start,
        end=end,
        days_loaded=days_written,
        days_skipped=skipped,
        index_rows=index_rows,
        seconds=time.monotonic() - began,
        source=compute.SOURCE,
        version=version,
        sect=compute.SECT,
    )
    logger.debug("almanac loaded: %s", result)
    return result
