"""Strict path converters: a path parameter that cannot be a real value is a 404, not a 500.

Registered at import (``starmall/urls.py`` imports this module before including the apps' URLs).
A value the converter refuses makes the route not match, so the request falls through to the
API's catch-all 404 (``not_found`` in API.md's format) before any view or database sees it:
NUL and control characters (PostgreSQL text cannot hold NUL) and numbers too big for the id
columns (SQLite raises OverflowError past 2**63) never reach a query.
"""

from django.urls import register_converter

from starmall.api.schema import MAX_ID


class OrderNoConverter:
    """``<order_no:...>``: letters, digits, ``_`` and ``-``, 1 to 32 characters (out_trade_no <= 32).

    Our order numbers are 22 digits (``apps.orders.create.order_no_new``).
    """

    regex = r"[0-9A-Za-z_-]{1,32}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return str(value)


class IdConverter:
    """``<id:...>``: a positive database id no larger than ``MAX_ID`` (2**53)."""

    regex = r"[0-9]{1,16}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if not 1 <= number <= MAX_ID:
            raise ValueError("id out of range")  # Django: the route does not match
        return number

    def to_url(self, value) -> str:
        return str(int(value))


class PlainConverter(OrderNoConverter):
    """``<plain:...>``: a short token of letters, digits, ``_`` and ``-`` (1 to 32), e.g. an
    almanac date or month; the view still validates it (400 ``invalid`` for ``2025-13``)."""


register_converter(OrderNoConverter, "order_no")
register_converter(PlainConverter, "plain")
register_converter(IdConverter, "id")
