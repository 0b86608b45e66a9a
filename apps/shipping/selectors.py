"""Reads for freight: templates as calculator terms, and the freight of an order's lines.

Orders asks here at confirm (``freight_for_lines``); shipping imports neither catalog nor orders:
it gets plain lines (template id, quantity, weight, volume, amount). The terms change only when
staff edit a template, so they are cached in Redis (one GET instead of three queries per confirm);
:func:`terms_cache_clear` runs on every write (``apps.shipping.apps``: saves and deletes of
templates and their rules; :func:`apps.shipping.services.freight_template_make_default`), now and
again after commit. A reader that loaded the old rows just before a commit can put them back after
it; :data:`TERMS_CACHE_SECONDS` bounds that. Redis errors fall back to the database.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.core.cache import cache

from apps.shipping.calculator import FreeTerms, FreightLine, RegionTerms, TemplateTerms, freight_quote
from apps.shipping.models import FreightTemplate
from apps.shipping.regions import city_key
from starmall import cache_drop


def template_default() -> FreightTemplate | None:
    """The shop's default template (products without one use it), or None if there is none."""
    return FreightTemplate.objects.filter(is_default=True).first()


def template_terms(template: FreightTemplate) -> TemplateTerms:
    """The calculator's view of a template (use ``prefetch_related("region_rules", "free_rules")``)."""
    return TemplateTerms(
        id=template.pk,
        name=template.name,
        mode=template.mode,
        first_unit=template.first_unit,
        first_fee_fen=template.first_fee_fen,
        extra_unit=template.extra_unit,
        extra_fee_fen=template.extra_fee_fen,
        regions=tuple(
            RegionTerms(
                provinces=frozenset(r.provinces),
                cities=frozenset(map(city_key, r.cities)),
                first_fee_fen=r.first_fee_fen,
                extra_fee_fen=r.extra_fee_fen,
            )
            for r in template.region_rules.all()
        ),
        free=tuple(
            FreeTerms(
                provinces=frozenset(r.provinces),
                cities=frozenset(map(city_key, r.cities)),
                min_amount_fen=r.min_amount_fen,
                min_count=r.min_count,
            )
            for r in template.free_rules.all()
        ),
    )


logger = logging.getLogger(__name__)

TERMS_CACHE_KEY = "shipping:terms:v1"
TERMS_CACHE_SECONDS = 10  # the longest a template edit can go unseen (see the module's docstring)


def templates_terms(template_ids: Iterable[int | None]) -> dict[int | None, TemplateTerms]:
    """Terms by template id; the key None (a product without a template) maps to the default
    template, and is missing when the shop has no default. From the cache of every template's
    terms (:func:`all_terms`)."""
    terms = all_terms()
    return {pk: terms[pk] for pk in set(template_ids) if pk in terms}


def all_terms() -> dict[int | None, TemplateTerms]:
    """Every template's terms by id, plus None for the default: one Redis GET, or on a miss
    three queries (templates, region rules, free rules) whose result is cached."""
    try:
        terms = cache.get(TERMS_CACHE_KEY)
    except Exception:  # Redis down or hung: the database answers
        logger.warning("freight terms cache unavailable", exc_info=True)
        return _terms_from_db()
    if terms is None:
        terms = _terms_from_db()
        try:
            cache.set(TERMS_CACHE_KEY, terms, timeout=TERMS_CACHE_SECONDS)
        except Exception:
            logger.warning("could not cache freight terms", exc_info=True)
    return terms


def _terms_from_db() -> dict[int | None, TemplateTerms]:
    terms: dict[int | None, TemplateTerms] = {}
    for template in FreightTemplate.objects.prefetch_related("region_rules", "free_rules"):
        terms[template.pk] = template_terms(template)
        if template.is_default:
            terms[None] = terms[template.pk]
    return terms


def terms_cache_clear() -> None:
    """A template or rule is being written: drop the cached terms now (this transaction's own
    reads see its writes) and again after commit (a reader may have cached the old rows in
    between); ``starmall.cache_drop``."""
    cache_drop.drop_now_and_after_commit([TERMS_CACHE_KEY])


def freight_for_lines(*, lines: list[dict], province: str, city: str) -> int:
    """Freight in fen for an order's goods lines delivered to ``province`` / ``city``.

    ``lines``: ``[{"template_id": int | None, "quantity": int, "weight_g": int,
    "volume_cm3": int, "amount_fen": int}]`` (weight and volume per unit; ``template_id`` None
    = the default template). The rule: ``apps.shipping.calculator.freight_quote``.
    """
    terms = templates_terms(line["template_id"] for line in lines)
    return freight_quote(
        [
            FreightLine(
                template=terms.get(line["template_id"]),
                quantity=line["quantity"],
                weight_g=line.get("weight_g", 0),
                volume_cm3=line.get("volume_cm3", 0),
                amount_fen=line["amount_fen"],
            )
            for line in lines
        ],
        province,
        city,
    )
