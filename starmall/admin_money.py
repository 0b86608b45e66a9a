"""Money in the back office: entered and shown in yuan, stored in fen.

:class:`YuanField` is the form field for an integer ``*_fen`` model field (staff type ``12.5``,
the form's cleaned value is ``1250``); :func:`yuan` formats fen for lists and read-only fields
(``1250`` -> ``"12.50"``). Exact: Decimal with two places, never float (``int(19.99 * 100)``
is 1998).
"""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.core.exceptions import ValidationError


def yuan(fen: int | None) -> str:
    """``1250`` -> ``"12.50"``; ``None`` -> ``"-"``. Negative amounts keep their sign."""
    if fen is None:
        return "-"
    sign = "-" if fen < 0 else ""
    whole, cents = divmod(abs(int(fen)), 100)
    return f"{sign}{whole}.{cents:02d}"


def fen_of(value: Decimal) -> int:
    """Yuan with at most two decimals -> integer fen."""
    return int(value * 100)


class YuanField(forms.DecimalField):
    """A form field for an integer fen column, edited in yuan (up to 2 decimals, >= 0 by default).

    ``clean()`` returns fen (int) or None; initial fen values are shown in yuan. Use it in a
    ModelForm by declaring it under the model field's name (``first_fee_fen = YuanField(...)``).
    """

    def __init__(self, *, max_yuan: int = 1_000_000, min_yuan: int = 0, **kwargs):
        kwargs.setdefault("max_digits", 12)
        kwargs.setdefault("decimal_places", 2)
        kwargs.setdefault("min_value", Decimal(min_yuan))
        kwargs.setdefault("max_value", Decimal(max_yuan))
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, int) and not isinstance(value, bool):  # fen from the model
            return yuan(value)
        return value  # what staff typed (a form shown again with errors)

    def clean(self, value):
        value = super().clean(value)
        return None if value is None else fen_of(value)

    def has_changed(self, initial, data) -> bool:
        try:
            value = self.to_python(data)
        except ValidationError:
            return True
        return (None if value is None else fen_of(value)) != initial
