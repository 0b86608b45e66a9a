"""Strict request fields: a value is refused unless it is what the served schema says it is.

A JSON body carries JSON types (API.md, "Money and counts in request bodies are JSON integers"):
``"100"``, ``true``, ``1.5`` or ``1.0`` for an integer, ``"0"`` or ``1`` for a boolean, ``0`` for a
string -> 400 ``invalid``. A query string or form (``QueryDict``) is text, read as each class says; a
parameter given empty is validated as the empty text it is, never read as absent (refused unless the
field allows blank, as :class:`FilterChoiceField` does). Request serializers take their fields from
here (DRF's own coerce ``"100"`` to 100, ``"0"`` to False, ``0`` to ``"0"``); each class subclasses
DRF's, so drf-spectacular derives the same schema from it.
"""

from __future__ import annotations

import math
import re

from django.core.validators import RegexValidator
from django.db import models
from django.http import QueryDict
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

#: A mainland mobile number (11 digits): address phones and SMS.
MOBILE_PHONE = r"^1[3-9][0-9]{9}$"

#: A character ``str.strip`` keeps, other than NUL: a string with one is not blank once DRF trims it.
NOT_ONLY_SPACE = r"[^\x00\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_DATE_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INTEGER_TEXT = re.compile(r"-?[0-9]+")
_NUMBER_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_BOOLEAN_TEXT = {"true": True, "false": False}


class _Strict:
    """Mixin: knows whether the serializer's input is text (a QueryDict) or JSON."""

    def _is_text(self) -> bool:
        return isinstance(getattr(self.root, "initial_data", None), QueryDict)

    def get_value(self, dictionary):
        if isinstance(dictionary, QueryDict) and self.field_name in dictionary:
            return dictionary[self.field_name]  # "" is a value to validate, not an absent one
        return super().get_value(dictionary)


class IntegerField(_Strict, serializers.IntegerField):
    """A JSON integer written as one (``2.0`` is refused like ``2.5``: a mini-program's JSON.stringify
    never writes a whole number so, and every count reads alike); in a query, digits."""

    def to_internal_value(self, data):
        if isinstance(data, str) and self._is_text() and len(data) <= 32 and _INTEGER_TEXT.fullmatch(data):
            return super().to_internal_value(data)
        if isinstance(data, int) and not isinstance(data, bool):
            return super().to_internal_value(data)
        self.fail("invalid")


class FloatField(_Strict, serializers.FloatField):
    """A finite JSON number; in a query, a decimal (``-12.5``, ``1e-05``; no ``nan`` or ``inf``)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and self._is_text() and len(data) <= 64 and _NUMBER_TEXT.fullmatch(data):
            data = float(data)
        if isinstance(data, (int, float)) and not isinstance(data, bool) and math.isfinite(data):
            return super().to_internal_value(data)
        self.fail("invalid")


class BooleanField(_Strict, serializers.BooleanField):
    """A JSON boolean; in a query, ``true`` or ``false``."""

    def to_internal_value(self, data):
        if isinstance(data, str) and self._is_text() and data in _BOOLEAN_TEXT:
            return _BOOLEAN_TEXT[data]
        if isinstance(data, bool):
            return data
        self.fail("invalid", input=data)


class CharField(_Strict, serializers.CharField):
    """A JSON string (a number is refused, not turned into text)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        if self.max_length is not None and len(data) > self.max_length:  # before trimming, as the schema counts
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class DateField(_Strict, serializers.DateField):
    """A date written ``YYYY-MM-DD`` (the schema's ``format: date``), nothing Python would also read."""

    def to_internal_value(self, value):
        if not isinstance(value, str) or not _DATE_TEXT.fullmatch(value):
            self.fail("invalid", format="YYYY-MM-DD")
        return super().to_internal_value(value)


class _CharFieldSchema(OpenApiSerializerFieldExtension):
    """What a request's :class:`CharField` takes, in the schema: no NUL (DRF refuses it), and
    unless blank is allowed a character ``str.strip`` keeps (``NOT_ONLY_SPACE``: DRF trims first).
    A field with its own pattern or enum keeps it."""

    target_class = "starmall.api.fields.CharField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        own = (
            "pattern" in schema
            or "enum" in schema
            or any(isinstance(v, RegexValidator) for v in self.target.validators)
        )
        if direction == "request" and not own:
            schema["not"] = {"pattern": r"\x00"}
            if not self.target.allow_blank and self.target.trim_whitespace:
                schema["pattern"] = NOT_ONLY_SPACE
        return schema


class _ListSerializerSchema(OpenApiSerializerFieldExtension):
    """A request's list (``many=True`` or a ListField) states its bounds: ``allow_empty=False`` as
    ``minItems: 1``, ``max_length`` as ``maxItems`` (drf-spectacular leaves both out)."""

    target_class = "rest_framework.serializers.ListSerializer"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request" and schema.get("type") == "array":
            if not self.target.allow_empty:
                schema["minItems"] = max(1, schema.get("minItems", 0))
            if getattr(self.target, "max_length", None) is not None:
                schema["maxItems"] = self.target.max_length
        return schema


class _ListFieldSchema(_ListSerializerSchema):
    target_class = "rest_framework.fields.ListField"


class RegexField(CharField, serializers.RegexField):
    """A JSON string matching the pattern (which the schema states)."""


class ChoiceField(_Strict, serializers.ChoiceField):
    """One of the choices as JSON writes it (``1`` is not the choice ``"1"``); in a query, its text."""

    def to_internal_value(self, data):
        if self._is_text() or data == "":
            return super().to_internal_value(data)
        if isinstance(data, (str, int)) and not isinstance(data, bool) and data in self.choices:
            return super().to_internal_value(data)
        self.fail("invalid_choice", input=data)


class FilterChoiceField(ChoiceField):
    """An optional list filter (``?status=``): one of the choices, or empty or absent for no
    filter — the schema's enum includes ``""``, which clients written against ``?status=`` send
    for "all". Its value is None then."""

    def __init__(self, **kwargs):
        super().__init__(**{"required": False, "allow_blank": True, **kwargs})

    def to_internal_value(self, data):
        return None if data == "" else super().to_internal_value(data)


class ModelSerializer(serializers.ModelSerializer):
    # DRF's ModelSerializer whose fields derived from the model are the strict ones above (a
    # comment, not a docstring: drf-spectacular would show it as every such component's description).

    serializer_choice_field = ChoiceField
    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.IntegerField: IntegerField,
        models.BigIntegerField: IntegerField,
        models.SmallIntegerField: IntegerField,
        models.PositiveIntegerField: IntegerField,
        models.PositiveSmallIntegerField: IntegerField,
        models.PositiveBigIntegerField: IntegerField,
        models.BooleanField: BooleanField,
        models.CharField: CharField,
        models.TextField: CharField,
        models.FloatField: FloatField,
    }
