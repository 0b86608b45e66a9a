"""Record tests/almanac/golden_days.json from the pinned lunar-python (run by hand, not a test).

    cd /work/main && .venv/bin/python tests/almanac/record_golden.py

The file freezes what lunar-python 1.4.8 (sect 1) answers for the dates below, so that a
library upgrade that changes any of them fails tests/almanac/test_almanac_compute.py loudly.
Re-record only on purpose (after reviewing the differences), together with the version pin.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.almanac import compute  # noqa: E402

DATES = [
    # leap months: the day before, the first day, the last day, the month after
    "2020-05-22",
    "2020-05-23",
    "2020-06-20",
    "2020-06-21",
    "2023-03-21",
    "2023-03-22",
    "2023-04-19",
    "2023-04-20",
    "2025-07-24",
    "2025-07-25",
    "2025-08-22",
    "2025-08-23",
    "2033-12-21",
    "2033-12-22",
    "2034-01-19",
    "2034-01-20",
    # lunar new year: 除夕 is 腊月三十 in 2024 but 腊月廿九 in 2025 and 2026
    "2024-02-09",
    "2024-02-10",
    "2025-01-28",
    "2025-01-29",
    "2026-02-16",
    "2026-02-17",
    # 立春 (year pillar by 立春 changes) a few days before / after the new year
    "2024-02-04",
    "2025-02-03",
    # solar terms minutes (or seconds) from midnight, and their neighbours
    "2021-12-21",
    "2021-12-22",
    "2008-05-20",
    "2008-05-21",
    "1951-12-23",
    "1979-01-20",
    "2026-02-18",
    "2014-03-06",
    "2013-07-22",
    # the sect example: 大雪 at 11:46 changes the exact-time month pillar mid-day
    "2022-12-07",
    # a term in Shanghai's summer-time years (1986-1991): stored instants stay +08:00
    "1988-07-07",
    # range edges and a spread of ordinary days
    "1901-01-01",
    "1901-02-19",
    "1911-10-10",
    "1937-07-07",
    "1949-10-01",
    "1976-07-28",
    "1997-07-01",
    "2000-01-01",
    "2008-08-08",
    "2012-12-21",
    "2019-10-01",
    "2030-06-15",
    "2049-10-01",
    "2077-03-03",
    "2099-09-09",
    "2100-12-31",
]


def record(date: str) -> dict:
    facts = dataclasses.asdict(compute.day_facts(dt.date.fromisoformat(date)))
    facts["date"] = date
    facts["lunar_text"] = facts["lunar_month_text"] + facts["lunar_day_text"]
    at = facts["solar_term_at"]
    facts["solar_term_at"] = at.isoformat() if at else None
    return {k: list(v) if isinstance(v, tuple) else v for k, v in facts.items()}


def main() -> None:
    out = {
        "source": compute.SOURCE,
        "version": compute.installed_version(),
        "sect": compute.SECT,
        "days": [record(d) for d in DATES],
    }
    path = Path(__file__).with_name("golden_days.json")
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(DATES)} days to {path}")


if __name__ == "__main__":
    main()
