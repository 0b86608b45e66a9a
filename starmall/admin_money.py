"""Money in the back office: staff type and read yuan, the database keeps integer fen.

:class:`YuanField` is the form field for an integer ``*_fen`` model field (staff type ``12.5``,
the form's cleaned value is ``1250``); :func:`yuan` formats fen for lists and read-only fields
(``1250`` -> ``"12.50"``). Exact: Decimal with two places, never float (``int(19.99 * 100)``
is 1998). One field and one display helper for every amount in the admin.
"""

from __future__ import annotations

from decimal import Decimal

from django import forms


def yuan(fen: int | None) -> str:
    """``12800`` -> ``"128.00"``; None -> ``"-"``. Negative amounts keep their sign; integer
    arithmetic only."""
    if fen is None:
        return "-"
    sign = "-" if fen < 0 else ""
    whole, cents = divmod(abs(int(fen)), 100)
    return f"{sign}{whole}.{cents:02d}"


def fen_of(value: Decimal) -> int:
    """Yuan (a Decimal with at most two decimals) -> integer fen."""
    return int((value * 100).to_integral_value())


class YuanField(forms.DecimalField):
    """A form field entered in yuan whose cleaned value is integer fen (None when empty).

    ``min_fen`` / ``max_fen`` bound the amount in fen (default 0 .. 1,000,000 yuan). Initial
    values (fen from the model) are shown as yuan; ``has_changed`` compares fen with fen, so
    ``ChangedFieldsAdmin`` writes the column only when staff changed the amount.
    """

    def __init__(self, *, min_fen: int | None = 0, max_fen: int | None = 100_000_000, **kwargs) -> None:
        kwargs.setdefault("max_digits", 12)
        kwargs.setdefault("decimal_places", 2)
        if min_fen is not None:
            kwargs.setdefault("min_value", Decimal(min_fen) / 100)
        if max_fen is not None:
            kwargs.setdefault("max_value", Decimal(max_fen) / 100)
        kwargs.setdefault("help_text", "元（保存为分）")
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, int) and not isinstance(value, bool):  # fen from the model
            return yuan(value)
        return value  # what staff typed (a form shown again with errors)

    def _fen(self, value) -> int | None:
        value = super().to_python(value)
        return None if value is None else fen_of(value)

    def clean(self, value):
        super().clean(value)  # required, decimal places, bounds
        return self._fen(value)

    def has_changed(self, initial, data) -> bool:
        try:
            return initial != self._fen(data)
        except forms.ValidationError:
            return True
