"""Money in the back office: staff type and read yuan, the database keeps integer fen.

``YuanField`` is a form field for a ``*_fen`` model field: it shows the stored fen as yuan
("128.00"), accepts yuan with at most two decimals and cleans to integer fen (12800), so a
ModelForm writes fen without any float. ``yuan(fen)`` renders fen as yuan for list columns.
"""

from __future__ import annotations

from decimal import Decimal

from django import forms


def yuan(fen: int | None) -> str:
    """``12800`` -> ``"128.00"``; None -> ``"-"``. Exact (integer arithmetic, no float)."""
    if fen is None:
        return "-"
    sign = "-" if fen < 0 else ""
    return f"{sign}{abs(fen) // 100}.{abs(fen) % 100:02d}"


class YuanField(forms.DecimalField):
    """A form field entered in yuan whose cleaned value is integer fen (None when empty).

    ``min_fen`` / ``max_fen`` bound the amount (in fen). Initial values (fen from the model)
    are shown as yuan; ``has_changed`` compares fen with fen, so ``ChangedFieldsAdmin`` writes
    the column only when staff changed the amount.
    """

    def __init__(self, *, min_fen: int | None = 0, max_fen: int | None = None, **kwargs) -> None:
        kwargs.setdefault("max_digits", 12)
        kwargs.setdefault("decimal_places", 2)
        if min_fen is not None:
            kwargs.setdefault("min_value", Decimal(min_fen) / 100)
        if max_fen is not None:
            kwargs.setdefault("max_value", Decimal(max_fen) / 100)
        kwargs.setdefault("help_text", "元（保存为分）")
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, int) and not isinstance(value, bool):
            return yuan(value)
        return value

    def _fen(self, value) -> int | None:
        value = super().to_python(value)
        return None if value is None else int((value * 100).to_integral_value())

    def clean(self, value):
        super().clean(value)  # required, decimal places, bounds
        return self._fen(value)

    def has_changed(self, initial, data) -> bool:
        try:
            return initial != self._fen(data)
        except forms.ValidationError:
            return True
