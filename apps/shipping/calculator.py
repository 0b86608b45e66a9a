"""The freight calculator: pure functions over plain terms, no database (tests build terms by hand).

``apps.shipping.selectors`` turns FreightTemplate rows into :class:`TemplateTerms`; orders calls
``selectors.freight_for_lines`` at confirm. Units: pieces, grams, cm³; money: integer fen.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from apps.shipping.regions import city_key, province_canonical

PIECE, WEIGHT, VOLUME = "piece", "weight", "volume"  # models.FreightMode values


@dataclass(frozen=True)
class RegionTerms:
    """A region rule: fees for ``provinces`` (full names), or only for ``cities`` of them."""

    provinces: frozenset[str]
    cities: frozenset[str]  # city_key() names; empty = the whole provinces
    first_fee_fen: int
    extra_fee_fen: int


@dataclass(frozen=True)
class FreeTerms:
    """A free-shipping rule: in its regions (no provinces = everywhere), free once the template's
    goods reach ``min_amount_fen`` (fen) and ``min_count`` (pieces), each when not None."""

    provinces: frozenset[str]
    cities: frozenset[str]
    min_amount_fen: int | None = None
    min_count: int | None = None


@dataclass(frozen=True)
class TemplateTerms:
    """A freight template: ``first_fee_fen`` covers ``first_unit`` units, then every started
    ``extra_unit`` costs ``extra_fee_fen``; units by ``mode`` (pieces, grams, cm³)."""

    id: int
    mode: str
    first_unit: int
    first_fee_fen: int
    extra_unit: int
    extra_fee_fen: int
    regions: tuple[RegionTerms, ...] = ()
    free: tuple[FreeTerms, ...] = ()
    name: str = field(default="", compare=False)


@dataclass(frozen=True)
class FreightLine:
    """One order line as freight sees it: per-unit ``weight_g`` and ``volume_cm3``;
    ``amount_fen`` is the line's goods amount (price x quantity, before coupons and points)."""

    template: TemplateTerms | None  # None: no template at all (a shop without a default): free
    quantity: int
    weight_g: int = 0
    volume_cm3: int = 0
    amount_fen: int = 0


@dataclass
class _Group:
    template: TemplateTerms
    units: int = 0
    pieces: int = 0
    amount_fen: int = 0


def _in_region(provinces: frozenset[str], cities: frozenset[str], province: str | None, city: str) -> bool:
    if provinces and province not in provinces:
        return False
    return not cities or city in cities


def _fees(template: TemplateTerms, province: str | None, city: str) -> tuple[int, int]:
    """(first fee, extra fee) for the address: a rule naming its city, else its province, else the
    template's own."""
    by_province = None
    for rule in template.regions:
        if province is None or province not in rule.provinces:
            continue
        if rule.cities:
            if city in rule.cities:
                return rule.first_fee_fen, rule.extra_fee_fen
        elif by_province is None:
            by_province = rule
    if by_province is not None:
        return by_province.first_fee_fen, by_province.extra_fee_fen
    return template.first_fee_fen, template.extra_fee_fen


def _is_free(group: _Group, province: str | None, city: str) -> bool:
    for rule in group.template.free:
        if not _in_region(rule.provinces, rule.cities, province, city):
            continue
        if rule.min_amount_fen is not None and group.amount_fen < rule.min_amount_fen:
            continue
        if rule.min_count is not None and group.pieces < rule.min_count:
            continue
        return True
    return False


def _extra(units: int, extra_unit: int, extra_fee_fen: int) -> int:
    """``ceil(units / extra_unit) * extra_fee_fen``: every started extra unit is charged in full."""
    return -(-max(0, units) // extra_unit) * extra_fee_fen


def freight_quote(lines: Iterable[FreightLine], province: str, city: str) -> int:
    """Freight in fen for ``lines`` delivered to ``province`` / ``city`` (names as on an address);
    0 for no lines or only free groups.

    The combination rule of the original (CRMEB ``StoreOrderComputedServices``, "首件运费最大值";
    steps in the comments below): lines are grouped by template; a group meeting a free-shipping
    rule for the address is free; of the others, one with the highest first fee pays it once (plus
    its extra fee beyond its ``first_unit`` units), every other group only its extra fee for every
    started ``extra_unit`` of ALL its units. Deviations: a template whose extra unit costs nothing
    still charges its first fee above its first units; free-shipping counts are pieces in every mode.
    """
    province_name = province_canonical(province)
    city_name = city_key(city)
    # 1. Per template: its units (pieces; grams = weight_g x quantity; cm³ = volume_cm3 x quantity,
    #    summed), its pieces and its goods amount.
    groups: dict[int, _Group] = {}
    for line in lines:
        template = line.template
        if template is None or line.quantity <= 0:
            continue
        group = groups.setdefault(template.id, _Group(template))
        per_unit = {PIECE: 1, WEIGHT: line.weight_g, VOLUME: line.volume_cm3}[template.mode]
        group.units += per_unit * line.quantity
        group.pieces += line.quantity
        group.amount_fen += line.amount_fen
    # 2-3. A group is free (charges 0, takes no further part) when a free-shipping rule of its
    #    template covers the address and the group reaches its thresholds (amount and/or pieces);
    #    else its fees are the region rule naming the city, else the province, else the template's.
    charged = []  # (group, first fee, extra fee)
    for group in groups.values():
        if not _is_free(group, province_name, city_name):
            charged.append((group, *_fees(group.template, province_name, city_name)))
    if not charged:
        return 0
    # 4-5. The group paying the highest first fee pays it for its first ``first_unit`` units plus its
    #    extra fee for every started ``extra_unit`` beyond them; every other group pays its extra fee
    #    for all its units. Groups sharing the highest first fee are each tried as the one paying it
    #    and the highest total is charged (as the original: the lines' order does not matter).
    extras = [_extra(g.units, g.template.extra_unit, extra) for g, _, extra in charged]
    highest = max(first for _, first, _ in charged)
    totals = []
    for i, (group, first, extra) in enumerate(charged):
        if first != highest:
            continue
        own = first + _extra(group.units - group.template.first_unit, group.template.extra_unit, extra)
        totals.append(own + sum(extras) - extras[i])
    return max(totals)
