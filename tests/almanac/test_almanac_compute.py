"""lunar-python through compute.py: golden values recorded from the pinned 1.4.8, sect 1.

No database: these check the source itself (leap months, the new-year boundary, solar terms
minutes from midnight, 宜/忌), its version pin, and that the process time zone changes nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from apps.almanac import compute, synonyms

ROOT = Path(__file__).resolve().parents[2]


def facts(date: str) -> compute.DayFacts:
    return compute.day_facts(dt.date.fromisoformat(date))


def as_golden(f: compute.DayFacts) -> dict:
    """DayFacts in the JSON shape of golden_days.json."""
    out = dataclasses.asdict(f)
    out["date"] = f.date.isoformat()
    out["lunar_text"] = f.lunar_text
    out["solar_term_at"] = f.solar_term_at.isoformat() if f.solar_term_at else None
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


# --- the pin -------------------------------------------------------------------------------


def test_compute_installed_version_is_the_pinned_one():
    assert compute.installed_version() == compute.PINNED_VERSION == "1.4.8"
    assert compute.check_version() == "1.4.8"
    assert compute.SECT == 1


def test_compute_pyproject_pins_the_same_exact_version():
    deps = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'"lunar-python==1\.4\.8"', deps)


def test_compute_check_version_refuses_another_version(monkeypatch):
    monkeypatch.setattr(compute, "installed_version", lambda: "1.4.9")
    with pytest.raises(compute.SourceVersionMismatch, match="1.4.9 is installed but .* pinned to 1.4.8"):
        compute.check_version()


def test_compute_only_compute_imports_lunar_python():
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "apps").rglob("*.py")
        if re.search(r"^\s*(from|import)\s+lunar_python", path.read_text(encoding="utf-8"), re.M)
    ]
    assert offenders == ["apps/almanac/compute.py"]


# --- leap months ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "date, lunar_year, month, day, is_leap, text",
    [
        ("2020-05-22", 2020, 4, 30, False, "四月三十"),
        ("2020-05-23", 2020, 4, 1, True, "闰四月初一"),
        ("2020-06-20", 2020, 4, 29, True, "闰四月廿九"),
        ("2020-06-21", 2020, 5, 1, False, "五月初一"),
        ("2023-03-21", 2023, 2, 30, False, "二月三十"),
        ("2023-03-22", 2023, 2, 1, True, "闰二月初一"),
        ("2023-04-19", 2023, 2, 29, True, "闰二月廿九"),
        ("2023-04-20", 2023, 3, 1, False, "三月初一"),
        ("2025-07-24", 2025, 6, 30, False, "六月三十"),
        ("2025-07-25", 2025, 6, 1, True, "闰六月初一"),
        ("2025-08-22", 2025, 6, 29, True, "闰六月廿九"),
        ("2025-08-23", 2025, 7, 1, False, "七月初一"),
        ("2033-12-21", 2033, 11, 30, False, "冬月三十"),
        ("2033-12-22", 2033, 11, 1, True, "闰冬月初一"),
        ("2034-01-19", 2033, 11, 29, True, "闰冬月廿九"),
        ("2034-01-20", 2033, 12, 1, False, "腊月初一"),
    ],
)
def test_compute_leap_months(date, lunar_year, month, day, is_leap, text):
    f = facts(date)
    assert (f.lunar_year, f.lunar_month, f.lunar_day, f.is_leap, f.lunar_text) == (
        lunar_year,
        month,
        day,
        is_leap,
        text,
    )


# --- the lunar new year --------------------------------------------------------------------


@pytest.mark.parametrize(
    "date, text, lunar_year, year_ganzhi, zodiac, festivals",
    [
        ("2024-02-09", "腊月三十", 2023, "癸卯", "兔", ("除夕",)),
        ("2024-02-10", "正月初一", 2024, "甲辰", "龙", ("春节",)),
        # 除夕 is the last day of 腊月, which has only 29 days in 2024 and 2025 (lunar years)
        ("2025-01-28", "腊月廿九", 2024, "甲辰", "龙", ("除夕",)),
        ("2025-01-29", "正月初一", 2025, "乙巳", "蛇", ("春节",)),
        ("2026-02-16", "腊月廿九", 2025, "乙巳", "蛇", ("除夕",)),
        ("2026-02-17", "正月初一", 2026, "丙午", "马", ("春节",)),
        ("1901-02-19", "正月初一", 1901, "辛丑", "牛", ("春节",)),
    ],
)
def test_compute_new_year_boundary(date, text, lunar_year, year_ganzhi, zodiac, festivals):
    f = facts(date)
    assert (f.lunar_text, f.lunar_year, f.year_ganzhi, f.zodiac) == (text, lunar_year, year_ganzhi, zodiac)
    assert f.festivals[: len(festivals)] == festivals


def test_compute_year_pillar_by_lichun_changes_before_the_new_year():
    # 2024-02-04 is 立春 (16:27:07) but still 腊月 of 癸卯: the year pillar counted from 立春
    # is already 甲辰, and the month pillar (by 节, sect 1) is 丙寅, the first month of 甲辰.
    f = facts("2024-02-04")
    assert (f.lunar_text, f.year_ganzhi, f.year_ganzhi_lichun, f.month_ganzhi, f.day_ganzhi) == (
        "腊月廿五",
        "癸卯",
        "甲辰",
        "丙寅",
        "戊戌",
    )
    assert (f.solar_term, f.solar_term_at) == (
        "立春",
        dt.datetime(2024, 2, 4, 16, 27, 7, tzinfo=compute.BEIJING),
    )


# --- solar terms minutes from midnight -----------------------------------------------------


@pytest.mark.parametrize(
    "date, term, at",
    [
        ("2021-12-21", "冬至", "23:59:19"),
        ("2008-05-21", "小满", "00:00:54"),
        ("1951-12-23", "冬至", "00:00:01"),
        ("1979-01-20", "大寒", "23:59:56"),
        ("2026-02-18", "雨水", "23:51:56"),
        ("2014-03-06", "惊蛰", "00:02:16"),
        ("2013-07-22", "大暑", "23:55:58"),
    ],
)
def test_compute_solar_term_near_midnight_is_on_its_beijing_date(date, term, at):
    day = dt.date.fromisoformat(date)
    f = compute.day_facts(day)
    assert f.solar_term == term
    assert f.solar_term_at == dt.datetime.combine(day, dt.time.fromisoformat(at), tzinfo=compute.BEIJING)
    assert f.solar_term_at.utcoffset() == dt.timedelta(hours=8)
    # ... and on neither neighbour
    assert compute.day_facts(day - dt.timedelta(days=1)).solar_term == ""
    assert compute.day_facts(day + dt.timedelta(days=1)).solar_term == ""


def test_compute_month_pillar_changes_on_the_day_of_the_jie():
    # 2021-12-07 is 大雪 (a 节): the sect-1 month pillar is 庚子 from that day on.
    assert compute.day_facts(dt.date(2021, 12, 6)).month_ganzhi == "己亥"
    assert compute.day_facts(dt.date(2021, 12, 7)).month_ganzhi == "庚子"


# --- 宜/忌 ---------------------------------------------------------------------------------


def test_compute_sect1_yiji_do_not_depend_on_the_hour_of_the_jie():
    # 2022-12-07: 大雪 at 11:46:16. Sect 1 takes the month pillar by day (壬子 all day) ...
    f = facts("2022-12-07")
    assert (f.solar_term, f.month_ganzhi, f.day_ganzhi) == ("大雪", "壬子", "甲午")
    assert f.yi == ("祭祀", "求医", "破屋", "坏垣", "馀事勿取")
    assert f.ji == ("诸事不宜",)
    assert (f.jianchu, f.zhishen, f.zhishen_type) == ("破", "司命", "黄道")
    # ... while sect 2 at 00:00 still uses 辛亥 (before 11:46) and answers something else.
    yi2, ji2 = compute.day_facts_sect2(dt.date(2022, 12, 7))
    assert yi2[:6] == ("纳采", "订盟", "嫁娶", "祭祀", "祈福", "雕刻")
    assert ji2 == ("上梁", "开仓", "出货财", "盖屋", "造船")


def test_compute_day_details_of_a_leap_day():
    f = facts("2025-07-25")
    assert f.yi == ("嫁娶", "祭祀", "出行", "裁衣", "冠笄", "交易", "雕刻", "纳财", "造畜稠", "造车器", "教牛马")
    assert f.ji == ("移徙", "入宅", "栽种", "动土", "破土", "作灶", "安葬", "行丧", "伐木", "上梁")
    assert (f.chong_zodiac, f.chong_ganzhi, f.sha) == ("牛", "己丑", "西")
    assert (f.pengzu_gan, f.pengzu_zhi) == ("乙不栽植千株不长", "未不服药毒气入肠")
    assert (f.zhishen, f.zhishen_type, f.jianchu) == ("玄武", "黑道", "建")
    assert f.jishen == ("守日", "不将", "圣心")
    assert f.xiongsha == ("月建", "小时", "土府", "元武")


def test_compute_matches_the_recorded_table(golden):
    """Every field of 51 recorded dates (1901..2100) is unchanged."""
    assert len(golden) == 51
    for date, expected in golden.items():
        assert as_golden(facts(date)) == expected, date


def test_compute_range_edges():
    assert facts("1901-01-01").lunar_text == "冬月十一"
    assert facts("2100-12-31").lunar_text == "腊月初一"
    assert [f.date for f in compute.days_between(dt.date(2024, 2, 27), dt.date(2024, 3, 1))] == [
        dt.date(2024, 2, 27),
        dt.date(2024, 2, 28),
        dt.date(2024, 2, 29),
        dt.date(2024, 3, 1),
    ]


def test_compute_vocabulary_is_the_synonym_tables_terms_and_markers():
    yi, ji = compute.vocabulary()
    assert yi | ji == synonyms.TERMS | synonyms.MARKERS
    assert len(synonyms.TERMS) == 111 and len(synonyms.MARKERS) == 3
    assert ji - yi == synonyms.NEVER_YI == {"乘船", "探病", "行丧", "词讼"}


# --- time zone -----------------------------------------------------------------------------

_DUMP = (
    "import dataclasses, datetime as dt, json, sys\n"
    "from apps.almanac import compute\n"
    "out = [dataclasses.asdict(compute.day_facts(dt.date.fromisoformat(d))) for d in sys.argv[1:]]\n"
    "print(json.dumps(out, default=str, ensure_ascii=False))\n"
)


def _compute_in(tz: str, dates: list[str]) -> list[dict]:
    env = {**os.environ, "TZ": tz}
    out = subprocess.run(
        [sys.executable, "-c", _DUMP, *dates],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_compute_same_answers_with_process_tz_utc_shanghai_and_los_angeles(golden):
    dates = sorted(golden)
    shanghai = _compute_in("Asia/Shanghai", dates)
    assert _compute_in("UTC", dates) == shanghai
    assert _compute_in("America/Los_Angeles", dates) == shanghai  # west of UTC: the date would slip
    assert [(d["lunar_month_text"] + d["lunar_day_text"]) for d in shanghai] == [golden[d]["lunar_text"] for d in dates]


def test_compute_same_answers_after_tzset_in_process(golden):
    before = os.environ.get("TZ")
    try:
        os.environ["TZ"] = "Pacific/Kiritimati"  # UTC+14
        time.tzset()
        east = [as_golden(facts(d)) for d in golden]
        os.environ["TZ"] = "Pacific/Pago_Pago"  # UTC-11
        time.tzset()
        west = [as_golden(facts(d)) for d in golden]
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()
    assert east == west == list(golden.values())
