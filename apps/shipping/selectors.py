"""Reads for freight: templates as calculator terms, and the freight of an order's lines.

Orders asks here at confirm (``freight_for_lines``); shipping imports neither catalog nor
orders: it gets plain lines (template id, quantity, weight, volume, amount).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from apps.shipping.calculator import FreeTerms, FreightLine, RegionTerms, TemplateTerms, freight_quote
from apps.shipping.models import FreightTemplate
from apps.shipping.regions import city_key


def template_default() -> FreightTemplate | None:
    """The shop's default template (products without one use it), or None if there is none."""
    return FreightTemplate.objects.filter(is_default=True).first()


def template_terms(template: FreightTemplate) -> TemplateTerms:
    """The calculator's view of a template (use ``prefetch_related("region_rules", "free_rules")``)."""
    return TemplateTerms(
        id=template.pk, name=template.name, mode=template.mode, first_unit=template.first_unit,
        first_fee_fen=template.first_fee_fen, extra_unit=template.extra_unit,
        extra_fee_fen=template.extra_fee_fen,
        regions=tuple(
            RegionTerms(provinces=frozenset(r.provinces), cities=frozenset(map(city_key, r.cities)),
                        first_fee_fen=r.first_fee_fen, extra_fee_fen=r.extra_fee_fen)
            for r in template.region_rules.all()
        ),
        free=tuple(
            FreeTerms(provinces=frozenset(r.provinces), cities=frozenset(map(city_key, r.cities)),
                      min_amount_fen=r.min_amount_fen, min_count=r.min_count)
            for r in template.free_rules.all()
        ),
    )


def templates_terms(template_ids: Iterable[int | None]) -> dict[int | None, TemplateTerms]:
    """Terms by template id; the key None (a product without a template) maps to the default
    template, and is missing when the shop has no default. Three queries (templates, region
    rules, free rules), whatever the number of templates."""
    ids = set(template_ids)
    wanted = {pk for pk in ids if pk is not None}
    which = Q(pk__in=wanted) | Q(is_default=True) if None in ids else Q(pk__in=wanted)
    rows = FreightTemplate.objects.filter(which).prefetch_related("region_rules", "free_rules")
    terms: dict[int | None, TemplateTerms] = {}
    for template in rows:
        terms[template.pk] = template_terms(template)
        if template.is_default and None in ids:
            terms[None] = terms[template.pk]
    return terms


def freight_for_lines(*, lines: list[dict], province: str, city: str) -> int:
    """Freight in fen for an order's goods lines delivered to ``province`` / ``city``.

    ``lines``: ``[{"template_id": int | None, "quantity": int, "weight_g": int,
    "volume_cm3": int, "amount_fen": int}]`` (weight and volume per unit; ``template_id`` None
    = the default template). The rule: ``apps.shipping.calculator.freight_quote``.
    """
    terms = templates_terms(line["template_id"] for line in lines)
    return freight_quote(
        [FreightLine(template=terms.get(line["template_id"]), quantity=line["quantity"],
                     weight_g=line.get("weight_g", 0), volume_cm3=line.get("volume_cm3", 0),
                     amount_fen=line["amount_fen"]) for line in lines],
        province, city,
    )
