"""Fixtures of the payments tests beyond the suite's (tests/conftest.py)."""

from v3_helpers import v3pay  # noqa: F401 - the Pay API v3 fixture
