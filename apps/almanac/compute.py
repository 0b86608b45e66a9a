"""The lunar-python wrapper: the ONE module of Starmall that imports ``lunar_python``.

``lunar-python`` (6tail) is pinned to :data:`PINNED_VERSION` (``pyproject.toml``): another version
may give other 宜/忌 tables, so :func:`check_version` refuses it and every stored row records its
version. 宜/忌 use :data:`SECT` 1 (the month pillar by day), so a date's answer never depends on the
hour; a Gregorian date goes through ``Solar.fromYmd(y, m, d).getLunar()`` (that civil day, 00:00).
lunar-python is pure calendar arithmetic (no clock, no ``TZ``); solar-term instants come back as
aware datetimes in :data:`BEIJING`, a fixed UTC+8. Nothing here touches Django, so the loader can
run it in worker processes.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
from dataclasses import dataclass

from lunar_python import Solar
from lunar_python.util import LunarUtil

SOURCE = "lunar-python"
DISTRIBUTION = "lunar_python"  # the name importlib.metadata knows it by
PINNED_VERSION = "1.4.8"  # == pyproject.toml's "lunar-python==1.4.8"
# 宜/忌 by sect 1: getDayYi(sect=1) takes the month pillar by day (getMonthInGanZhi: the month changes
# on the day of the 节), so a date's answer never depends on the hour. Sect 2 takes the exact-time
# pillar, which flips at the minute of the 节: on 2022-12-07 (大雪 at 11:46:16) the two sects give
# different 宜/忌 (tests/almanac/test_almanac_compute.py records both).
SECT = 1

# Dates the almanac is defined for (lunar-python is exact over this range).
FIRST_DATE = dt.date(1901, 1, 1)
LAST_DATE = dt.date(2100, 12, 31)

# lunar-python gives solar-term instants in Beijing time, a fixed UTC+8. Not Asia/Shanghai: that zone
# kept summer time in 1940-1949 and 1986-1991 and would shift those instants by an hour.
BEIJING = dt.timezone(dt.timedelta(hours=8), "UTC+08:00")


class SourceVersionMismatch(RuntimeError):
    """The installed lunar-python is not the pinned version (the loader refuses to run)."""


def installed_version() -> str:
    """Version string of the installed lunar-python distribution."""
    return importlib.metadata.version(DISTRIBUTION)


def check_version() -> str:
    """Return the installed version; raise SourceVersionMismatch unless it is the pinned one."""
    version = installed_version()
    if version != PINNED_VERSION:
        raise SourceVersionMismatch(
            f"lunar-python {version} is installed but the almanac is pinned to {PINNED_VERSION}; "
            f"install lunar-python=={PINNED_VERSION} (pyproject.toml) before loading"
        )
    return version


@dataclass(frozen=True)
class DayFacts:
    """Everything the almanac keeps about one civil date (all by day, none by hour)."""

    date: dt.date
    lunar_year: int  # the lunar year the day belongs to (腊月 days of early 2025 -> 2024)
    lunar_month: int  # 1..12; a leap month has the number of the month it repeats
    lunar_day: int  # 1..30
    is_leap: bool
    lunar_month_text: str  # 闰冬月, 腊月, 正月
    lunar_day_text: str  # 初一, 廿九, 三十
    year_ganzhi: str  # year pillar counted from 正月初一 (lunar-python's getYearInGanZhi)
    year_ganzhi_lichun: str  # year pillar counted from the day of 立春 (as in 八字)
    month_ganzhi: str  # month pillar by day (changes on the day of each 节) = the sect-1 month
    day_ganzhi: str
    zodiac: str  # 生肖 of the lunar year (changes at 正月初一)
    solar_term: str  # one of the 24 节气 when it falls on this date (Beijing time), else ""
    solar_term_at: dt.datetime | None  # its instant, aware, fixed UTC+8
    yi: tuple[str, ...]  # 宜, in the almanac's order, markers (馀事勿取, 无 ...) included
    ji: tuple[str, ...]  # 忌, same
    chong_zodiac: str  # 冲: the zodiac animal clashed (鼠)
    chong_ganzhi: str  # 冲: the clashed pillar (戊子)
    sha: str  # 煞: direction (北)
    pengzu_gan: str  # 彭祖百忌, stem half
    pengzu_zhi: str  # 彭祖百忌, branch half
    zhishen: str  # 值神 (day 天神: 司命, 青龙 ...)
    zhishen_type: str  # 黄道 / 黑道
    jianchu: str  # 建除十二值星 (建, 除, 满 ... 闭)
    jishen: tuple[str, ...]  # 吉神宜趋
    xiongsha: tuple[str, ...]  # 凶煞宜忌
    festivals: tuple[str, ...]  # lunar then Gregorian festivals (春节, 除夕, 国庆节 ...)

    @property
    def lunar_text(self) -> str:
        """Month and day as printed in almanacs: ``闰冬月初一``."""
        return self.lunar_month_text + self.lunar_day_text


def _at(solar) -> dt.datetime:
    return dt.datetime(
        solar.getYear(),
        solar.getMonth(),
        solar.getDay(),
        solar.getHour(),
        solar.getMinute(),
        solar.getSecond(),
        tzinfo=BEIJING,
    )


def day_facts(date: dt.date) -> DayFacts:
    """The almanac facts of one Gregorian date (1901-01-01..2100-12-31)."""
    solar = Solar.fromYmd(date.year, date.month, date.day)
    lunar = solar.getLunar()
    month = lunar.getMonth()  # negative for a leap month
    term = lunar.getCurrentJie() or lunar.getCurrentQi()  # their getSolar() is the exact instant
    return DayFacts(
        date=date,
        lunar_year=lunar.getYear(),
        lunar_month=abs(month),
        lunar_day=lunar.getDay(),
        is_leap=month < 0,
        lunar_month_text=lunar.getMonthInChinese() + "月",
        lunar_day_text=lunar.getDayInChinese(),
        year_ganzhi=lunar.getYearInGanZhi(),
        year_ganzhi_lichun=lunar.getYearInGanZhiByLiChun(),
        month_ganzhi=lunar.getMonthInGanZhi(),
        day_ganzhi=lunar.getDayInGanZhi(),
        zodiac=lunar.getYearShengXiao(),
        solar_term=term.getName() if term else "",
        solar_term_at=_at(term.getSolar()) if term else None,
        yi=tuple(lunar.getDayYi(SECT)),
        ji=tuple(lunar.getDayJi(SECT)),
        chong_zodiac=lunar.getDayChongShengXiao(),
        chong_ganzhi=lunar.getDayChongGan() + lunar.getDayChong(),
        sha=lunar.getDaySha(),
        pengzu_gan=lunar.getPengZuGan(),
        pengzu_zhi=lunar.getPengZuZhi(),
        zhishen=lunar.getDayTianShen(),
        zhishen_type=lunar.getDayTianShenType(),
        jianchu=lunar.getZhiXing(),
        jishen=tuple(lunar.getDayJiShen()),
        xiongsha=tuple(lunar.getDayXiongSha()),
        festivals=tuple(lunar.getFestivals()) + tuple(solar.getFestivals()),
    )


def days_between(start: dt.date, end: dt.date) -> list[DayFacts]:
    """:func:`day_facts` for every date from ``start`` to ``end`` inclusive (a loader chunk)."""
    out = []
    day = start
    while day <= end:
        out.append(day_facts(day))
        day += dt.timedelta(days=1)
    return out


def day_facts_sect2(date: dt.date) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """宜/忌 by the exact-time month pillar (sect 2) at 00:00 — only for tests and docs."""
    lunar = Solar.fromYmd(date.year, date.month, date.day).getLunar()
    return tuple(lunar.getDayYi(2)), tuple(lunar.getDayJi(2))


def vocabulary() -> tuple[set[str], set[str]]:
    """Every string lunar-python's day table can list under 宜 and under 忌, markers included.

    Enumerates all 60 x 60 (month pillar, day pillar) pairs, the table's whole domain, in about
    0.2 s; the synonym table's tests check their term lists against it.
    """
    yi: set[str] = set()
    ji: set[str] = set()
    for month in LunarUtil.JIA_ZI:
        for day in LunarUtil.JIA_ZI:
            yi.update(LunarUtil.getDayYi(month, day))
            ji.update(LunarUtil.getDayJi(month, day))
    return yi, ji
