"""Almanac fixtures: golden values recorded from lunar-python 1.4.8 and small loaded ranges.

Tests load only a few months (about 0.1 s each); the full 1901-2100 load is measured by
``bench/bench_almanac.py`` and the README, not here.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

GOLDEN_PATH = Path(__file__).with_name("golden_days.json")

# The range most DB tests load: contains 闰六月 (2025-07-25), eight solar terms, and days on
# which the terms of one word disagree (2025-05-22 宜移徙 忌入宅; 2025-06-20 宜修造 忌动土).
SUMMER_2025 = (dt.date(2025, 5, 1), dt.date(2025, 8, 31))


@pytest.fixture(scope="session")
def golden() -> dict[str, dict]:
    """Recorded facts by ISO date (tests/almanac/record_golden.py wrote them)."""
    data = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))
    assert (data["source"], data["version"], data["sect"]) == ("lunar-python", "1.4.8", 1)
    return {day["date"]: day for day in data["days"]}


@pytest.fixture(autouse=True)
def _almanac_cache_generation():
    """Start each test with a fresh cache generation (no answer cached by another test)."""
    from apps.almanac import caching

    caching.bump()


@pytest.fixture
def load(db):
    """``load(start, end, **kw)`` -> LoadResult: runs the loader in this process."""
    from apps.almanac import services

    def run(start: dt.date, end: dt.date, **kw):
        kw.setdefault("workers", 1)
        return services.almanac_load(start=start, end=end, **kw)

    return run


@pytest.fixture
def summer(load):
    """2025-05-01..2025-08-31 loaded (123 days)."""
    return load(*SUMMER_2025)


@pytest.fixture
def anon_api():
    """An anonymous API client (the almanac is public)."""
    from rest_framework.test import APIClient

    return APIClient()
