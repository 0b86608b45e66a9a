"""Money in the back office: stored as integer fen, entered and shown as yuan with two decimals.

ONE display helper (:func:`yuan`) and ONE form field (:class:`YuanField`), used for every
fen model field by :class:`YuanAdminMixin` (which the shop's admin site mixes into every
registered ModelAdmin and inline, ``apps.backoffice.site``), so no admin formats money by hand.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import forms
from django.core import validators
from django.core.exceptions import ValidationError
from unfold.widgets import UnfoldAdminTextInputWidget

FEN_PER_YUAN = 100


def yuan(fen: int | None) -> str:
    """``1234`` (fen) -> ``"12.34"`` (yuan, two decimals); ``None`` -> ``"-"``. Negative fen keep the sign."""
    return "-" if fen is None else str(yuan_amount(fen))


def yuan_amount(fen: int | None) -> Decimal | None:
    """``1234`` (fen) -> ``Decimal("12.34")``, exact, two decimals (a number where one is wanted,
    e.g. an Excel cell finance sums); ``None`` -> ``None``."""
    return None if fen is None else Decimal(int(fen)).scaleb(-2)


#: what staff may type as an amount: ASCII digits, an optional sign and decimal point ("12.34", "-5")
_AMOUNT_TEXT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)", re.ASCII)
#: full-width digits and signs (０-９, ．, －, ＋): Decimal() would read them, a typo we refuse instead
_FULL_WIDTH = re.compile(r"[\uff10-\uff19\uff0e\uff0b\uff0d]")
FULL_WIDTH_ERROR = "请用半角数字填写金额（元），例如 12.34：不能使用全角数字（０-９）"


def fen_from_yuan(value) -> int:
    """``"12.34"`` / ``Decimal("12.3")`` (yuan) -> ``1234`` (fen). Raises ValidationError (Chinese)
    for full-width digits (``"１２.３４"``, code ``full_width``), more than two decimals, or text
    that is not an amount in ASCII digits."""
    text = str(value).strip()
    if _FULL_WIDTH.search(text):
        raise ValidationError(FULL_WIDTH_ERROR, code="full_width")
    if not isinstance(value, Decimal) and not _AMOUNT_TEXT.fullmatch(text):
        raise ValidationError("请输入金额（元），例如 12.34", code="invalid")
    try:
        amount = Decimal(text)
    except (InvalidOperation, ValueError) as exc:
        raise ValidationError("请输入金额（元），例如 12.34", code="invalid") from exc
    if not amount.is_finite():
        raise ValidationError("请输入金额（元），例如 12.34", code="invalid")
    if amount != amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP):
        raise ValidationError("金额最多两位小数（分）", code="max_decimal_places")
    return int(amount * FEN_PER_YUAN)


class YuanField(forms.Field):
    """A form field for a ``*_fen`` column: the user types yuan ("12.34"), ``cleaned_data`` holds
    integer fen (1234). The initial fen value is shown as yuan. ``min_fen``/``max_fen`` bound it."""

    # The admin theme's text input (a plain TextInput renders unstyled, like text, under django-unfold).
    widget = UnfoldAdminTextInputWidget(
        attrs={"inputmode": "decimal", "class": "yuan-input", "style": "max-width:12em"}
    )

    def __init__(self, *, min_fen: int | None = 0, max_fen: int | None = None, **kwargs):
        kwargs.pop("max_length", None)
        self.min_fen, self.max_fen = min_fen, max_fen
        kwargs.setdefault("help_text", "")
        super().__init__(**kwargs)
        if not self.help_text:
            self.help_text = "单位：元，两位小数"

    def prepare_value(self, value):
        if isinstance(value, int) and not isinstance(value, bool):
            return yuan(value)
        return value

    def to_python(self, value):
        if value in self.empty_values:
            return None
        return fen_from_yuan(value)

    def validate(self, value):
        super().validate(value)
        if value is None:
            return
        if self.min_fen is not None and value < self.min_fen:
            raise ValidationError(f"金额不能小于 {yuan(self.min_fen)} 元", code="min_value")
        if self.max_fen is not None and value > self.max_fen:
            raise ValidationError(f"金额不能大于 {yuan(self.max_fen)} 元", code="max_value")

    def has_changed(self, initial, data):
        try:
            return self.to_python(data) != (None if initial in self.empty_values else int(initial))
        except (ValidationError, TypeError, ValueError):
            return True


def _yuan_column(field):
    """A read-only column/field showing ``field`` (a fen model field) in yuan."""
    name = field.name

    def column(obj):
        return yuan(getattr(obj, name))

    column.short_description = f"{field.verbose_name}（元）"
    column.admin_order_field = name
    return column


#: Model fields holding fen whose names do not end in ``_fen``: WeChat's own field name.
FEN_FIELD_NAMES = ("total_fee",)

_INTEGER_TYPES = (
    "IntegerField",
    "PositiveIntegerField",
    "BigIntegerField",
    "PositiveBigIntegerField",
    "SmallIntegerField",
    "PositiveSmallIntegerField",
)


def _bounds(db_field) -> tuple[int | None, int | None]:
    """The (min, max) fen the model field's validators allow: its own ``MinValueValidator`` /
    ``MaxValueValidator`` and the integer column's range (0 for positive fields)."""
    lows = [v.limit_value for v in db_field.validators if isinstance(v, validators.MinValueValidator)]
    highs = [v.limit_value for v in db_field.validators if isinstance(v, validators.MaxValueValidator)]
    return (max(lows) if lows else None), (min(highs) if highs else None)


class YuanAdminMixin:
    """For ModelAdmins and inlines: every ``*_fen`` field (and WeChat's ``total_fee``) is a
    :class:`YuanField` when editable and a yuan column (``<name>_yuan``) when shown read-only or
    in the change list. Label: the field's verbose name + "（元）"; bounds: its validators."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._fen_fields = {
            f.name: f
            for f in self.model._meta.concrete_fields
            if (f.name.endswith("_fen") or f.name in FEN_FIELD_NAMES) and f.get_internal_type() in _INTEGER_TYPES
        }
        for name, field in self._fen_fields.items():
            setattr(self, f"{name}_yuan", _yuan_column(field))

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name in getattr(self, "_fen_fields", {}):
            min_fen, max_fen = _bounds(db_field)
            return YuanField(
                label=kwargs.get("label") or f"{db_field.verbose_name}（元）",
                required=not db_field.blank,
                initial=db_field.default if isinstance(db_field.default, int) else None,
                min_fen=min_fen,
                max_fen=max_fen,
                help_text=kwargs.get("help_text") or db_field.help_text or "",
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def _as_yuan(self, name):
        return f"{name}_yuan" if isinstance(name, str) and name in self._fen_fields else name

    def get_list_display(self, request):
        return [self._as_yuan(n) for n in super().get_list_display(request)]

    def get_readonly_fields(self, request, obj=None):
        # The yuan columns are callables: listed here so that a form never looks for them.
        names = list(super().get_readonly_fields(request, obj))
        return names + [f"{n}_yuan" for n in self._fen_fields if f"{n}_yuan" not in names]

    def _map_readonly(self, request, obj, names):
        readonly = set(super().get_readonly_fields(request, obj))
        if not self.has_change_permission(request, obj):
            readonly |= set(self._fen_fields)
        editable = {n for n in names if n in self._fen_fields and n not in readonly}
        out = []
        for name in names:
            if isinstance(name, str) and name.endswith("_yuan") and name[: -len("_yuan")] in editable:
                continue  # the field itself is on the form
            if isinstance(name, str) and name.endswith("_yuan") and name[: -len("_yuan")] not in names:
                continue  # a yuan column nobody asked for
            name = self._as_yuan(name) if name in readonly else name
            if name not in out:
                out.append(name)
        return out

    def get_fields(self, request, obj=None):
        return self._map_readonly(request, obj, super().get_fields(request, obj))

    def get_fieldsets(self, request, obj=None):
        if not self.fieldsets:
            return [(None, {"fields": self.get_fields(request, obj)})]
        out = []
        for title, options in super().get_fieldsets(request, obj):
            options = dict(options)
            options["fields"] = [
                self._map_readonly(request, obj, list(f))
                if isinstance(f, (list, tuple))
                else self._map_readonly(request, obj, [f])[0]
                for f in options.get("fields", ())
            ]
            out.append((title, options))
        return out
