"""The loader (services.almanac_load) and the load_almanac command."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command

from apps.almanac import compute, services
from apps.almanac.models import AlmanacActivity, AlmanacDay, AlmanacRange

D = dt.date


def ranges() -> list[tuple]:
    return list(AlmanacRange.objects.order_by("start").values_list("start", "end", "source_version", "sect"))


def index_count(start: dt.date, end: dt.date) -> int:
    return AlmanacActivity.objects.filter(day__gte=start, day__lte=end).count()


def test_load_writes_days_index_and_range(load, golden):
    result = load(D(2025, 7, 20), D(2025, 7, 31))
    assert (result.days_loaded, result.days_skipped) == (12, 0)
    assert (result.source, result.version, result.sect) == ("lunar-python", "1.4.8", 1)
    assert AlmanacDay.objects.count() == 12
    # every 宜/忌 term of every day is indexed once, markers are not
    expected = sum(
        len([t for t in f.yi + f.ji if t not in ("馀事勿取", "诸事不宜", "无")])
        for f in compute.days_between(D(2025, 7, 20), D(2025, 7, 31))
    )
    assert result.index_rows == expected == AlmanacActivity.objects.count()
    assert ranges() == [(D(2025, 7, 20), D(2025, 7, 31), "1.4.8", 1)]

    day = AlmanacDay.objects.get(pk=D(2025, 7, 25))
    g = golden["2025-07-25"]
    assert (day.lunar_text, day.lunar_month, day.is_leap, day.yi, day.ji) == (
        "闰六月初一",
        6,
        True,
        g["yi"],
        g["ji"],
    )
    assert (day.source, day.source_version, day.sect) == ("lunar-python", "1.4.8", 1)
    assert set(AlmanacActivity.objects.filter(day=D(2025, 7, 25), kind="ji").values_list("term", flat=True)) == set(
        g["ji"]
    )


def test_load_markers_are_shown_but_not_indexed(load):
    load(D(2025, 5, 6), D(2025, 5, 6))
    day = AlmanacDay.objects.get(pk=D(2025, 5, 6))
    assert day.yi == ["祭祀", "解除", "破屋", "坏垣", "馀事勿取"]
    assert day.ji == ["诸事不宜"]
    assert sorted(AlmanacActivity.objects.values_list("kind", "term")) == sorted(
        [("yi", "祭祀"), ("yi", "解除"), ("yi", "破屋"), ("yi", "坏垣")]
    )


def test_load_solar_term_instant_survives_the_database(load):
    # 1988 was a summer-time year in Asia/Shanghai: the stored instant must still be 05:32:54 +08:00.
    load(D(1988, 7, 7), D(1988, 7, 7))
    load(D(2021, 12, 21), D(2021, 12, 21))
    day = AlmanacDay.objects.get(pk=D(1988, 7, 7))
    assert day.solar_term == "小暑"
    assert day.solar_term_at == dt.datetime(1988, 7, 6, 21, 32, 54, tzinfo=dt.UTC)
    day = AlmanacDay.objects.get(pk=D(2021, 12, 21))
    assert day.solar_term_at == dt.datetime(2021, 12, 21, 23, 59, 19, tzinfo=compute.BEIJING)


def test_load_rerun_skips_loaded_years_and_force_rewrites(load):
    first = load(D(2024, 12, 1), D(2025, 1, 31))
    assert first.days_loaded == 62
    rows = index_count(D(2024, 12, 1), D(2025, 1, 31))

    again = load(D(2024, 12, 1), D(2025, 1, 31))
    assert (again.days_loaded, again.days_skipped, again.index_rows) == (0, 62, 0)

    AlmanacDay.objects.filter(pk=D(2025, 1, 1)).update(lunar_text="tampered")
    forced = load(D(2024, 12, 1), D(2025, 1, 31), force=True)
    assert (forced.days_loaded, forced.days_skipped, forced.index_rows) == (62, 0, rows)
    assert AlmanacDay.objects.get(pk=D(2025, 1, 1)).lunar_text == "腊月初二"
    assert AlmanacDay.objects.count() == 62 and index_count(D(2024, 12, 1), D(2025, 1, 31)) == rows
    assert ranges() == [(D(2024, 12, 1), D(2025, 1, 31), "1.4.8", 1)]


def test_load_partly_loaded_window_loads_only_missing_years(load):
    load(D(2024, 1, 1), D(2024, 12, 31))
    result = load(D(2024, 6, 1), D(2025, 2, 28))
    assert (result.days_loaded, result.days_skipped) == (59, 214)  # 2025 part loaded, 2024 part skipped
    assert ranges() == [(D(2024, 1, 1), D(2025, 2, 28), "1.4.8", 1)]


def test_load_merges_adjacent_ranges_and_keeps_gaps(load):
    load(D(2025, 1, 1), D(2025, 1, 31))
    load(D(2025, 3, 1), D(2025, 3, 31))
    assert ranges() == [(D(2025, 1, 1), D(2025, 1, 31), "1.4.8", 1), (D(2025, 3, 1), D(2025, 3, 31), "1.4.8", 1)]
    load(D(2025, 2, 1), D(2025, 2, 28))
    assert ranges() == [(D(2025, 1, 1), D(2025, 3, 31), "1.4.8", 1)]


def test_load_reloads_days_from_another_version(load):
    load(D(2025, 1, 1), D(2025, 1, 10))
    AlmanacDay.objects.update(source_version="1.4.7")
    AlmanacRange.objects.update(source_version="1.4.7")
    load(D(2025, 1, 5), D(2025, 1, 31))  # not covered by a 1.4.8 range: the whole chunk is loaded
    assert ranges() == [
        (D(2025, 1, 1), D(2025, 1, 4), "1.4.7", 1),
        (D(2025, 1, 5), D(2025, 1, 31), "1.4.8", 1),
    ]
    assert set(AlmanacDay.objects.filter(date__gte=D(2025, 1, 5)).values_list("source_version", flat=True)) == {"1.4.8"}


def test_load_refuses_another_library_version(load, monkeypatch):
    monkeypatch.setattr(compute, "installed_version", lambda: "1.4.9")
    with pytest.raises(compute.SourceVersionMismatch):
        load(D(2025, 1, 1), D(2025, 1, 31))
    with pytest.raises(CommandError, match="lunar-python 1.4.9 is installed but the almanac is pinned to 1.4.8"):
        call_command("load_almanac", "--start", "2025-01-01", "--end", "2025-01-31", "--no-progress")
    assert AlmanacDay.objects.count() == 0 and AlmanacRange.objects.count() == 0


@pytest.mark.parametrize(
    "start, end", [(D(1900, 12, 31), D(1901, 1, 5)), (D(2100, 12, 1), D(2101, 1, 1)), (D(2025, 2, 1), D(2025, 1, 1))]
)
def test_load_rejects_ranges_outside_1901_2100_or_empty(load, start, end):
    with pytest.raises(services.InvalidRange):
        load(start, end)
    assert AlmanacDay.objects.count() == 0


def test_load_crash_keeps_whole_committed_years(load, monkeypatch):
    real = services._write_chunk
    calls = []

    def flaky(facts):
        calls.append(facts[0].date)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return real(facts)

    monkeypatch.setattr(services, "_write_chunk", flaky)
    with pytest.raises(RuntimeError):
        load(D(2024, 12, 20), D(2025, 1, 10))
    assert ranges() == [(D(2024, 12, 20), D(2024, 12, 31), "1.4.8", 1)]
    assert AlmanacDay.objects.count() == 12
    monkeypatch.setattr(services, "_write_chunk", real)
    result = load(D(2024, 12, 20), D(2025, 1, 10))
    assert (result.days_loaded, result.days_skipped) == (10, 12)
    assert ranges() == [(D(2024, 12, 20), D(2025, 1, 10), "1.4.8", 1)]


def test_load_worker_processes_give_the_same_rows(load, monkeypatch):
    monkeypatch.setattr(services, "PARALLEL_MIN_DAYS", 0)
    load(D(2023, 12, 1), D(2024, 2, 29), workers=2)  # three chunks computed in 2 spawned processes
    parallel = list(AlmanacDay.objects.values_list("date", "lunar_text", "yi", "ji", "solar_term_at"))
    parallel_index = sorted(AlmanacActivity.objects.values_list("day", "kind", "term"))
    load(D(2023, 12, 1), D(2024, 2, 29), workers=1, force=True)
    assert list(AlmanacDay.objects.values_list("date", "lunar_text", "yi", "ji", "solar_term_at")) == parallel
    assert sorted(AlmanacActivity.objects.values_list("day", "kind", "term")) == parallel_index
    assert len(parallel) == 91


def test_load_command_prints_a_summary_and_is_rerunnable(db):
    out = io.StringIO()
    call_command("load_almanac", "--start", "2025-03-01", "--end", "2025-03-31", "--no-progress", stdout=out)
    assert "almanac 2025-03-01..2025-03-31: 31 days loaded" in out.getvalue()
    assert "source lunar-python 1.4.8 sect=1" in out.getvalue()
    out = io.StringIO()
    call_command("load_almanac", "--start", "2025-03-01", "--end", "2025-03-31", "--no-progress", stdout=out)
    assert ": 0 days loaded (0 index rows), 31 already loaded" in out.getvalue()


def test_load_command_years_back_and_ahead_are_whole_years_around_today(db, monkeypatch):
    from django.utils import timezone

    monkeypatch.setattr(timezone, "localdate", lambda *a, **k: D(2025, 6, 15))
    out = io.StringIO()
    call_command(
        "load_almanac", "--years-back", "0", "--years-ahead", "0", "--no-progress", "--workers", "1", stdout=out
    )
    assert "almanac 2025-01-01..2025-12-31: 365 days loaded" in out.getvalue()
    assert ranges() == [(D(2025, 1, 1), D(2025, 12, 31), "1.4.8", 1)]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--start", "2025-13-01"], "not a date"),
        (["--start", "2025-01-01", "--years-back", "1"], "not both"),
        (["--start", "1800-01-01", "--end", "1800-01-02"], "the almanac covers 1901-01-01..2100-12-31"),
    ],
)
def test_load_command_rejects_bad_arguments(db, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("load_almanac", *args, "--no-progress")
