"""The spec builder's plan: a product's SKUs and the spec tree staff edited -> what happens to each SKU.

Pure (no database): :func:`spec_tree_clean` checks the edited tree, :func:`spec_plan` maps the
old SKUs onto its combinations (keep / rename / revive / create / deactivate: :class:`Plan`); a
SKU is never deleted (order lines refer to it) and staff's own on/off of a SKU is kept. The tree
as the editor sends it, ``was`` being the name / value when the page was opened (null: added)::

    [{"name": "颜色", "was": "颜色", "values": [{"value": "雾白", "was": "月白"}, {"value": "墨黑", "was": null}]},
     {"name": "容量", "was": null, "values": [{"value": "60ml", "was": null}]}]
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from starmall.errors import InvalidInput

MAX_SKUS = 200  # a matrix beyond this is a typo, not a product
MAX_NAME = 20
MAX_VALUE = 30


@dataclass(frozen=True)
class OldSku:
    id: int
    specs: dict[str, str]
    is_active: bool = True


@dataclass
class Plan:
    tree: list[dict]  # the clean tree to store: [{"name", "values": [str]}]
    # SKU ids whose specs are unchanged (never switched on).
    keep: list[int] = field(default_factory=list)
    # (SKU id, new specs): the combination survives under new names or values; the SKU keeps its
    # id, price, stock and orders. A spec added: the SKU takes its first value. A spec removed: of
    # the SKUs collapsing into one combination the first active one stays. Never switches on.
    rename: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    # Switched-off SKU ids whose combination no live SKU has: switched on again.
    revive: list[int] = field(default_factory=list)
    # Specs of combinations no SKU has.
    create: list[dict[str, str]] = field(default_factory=list)
    # Live SKU ids whose combination is gone: switched off (``is_active``), never deleted.
    deactivate: list[int] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        return bool(self.rename or self.revive or self.create or self.deactivate)


def _text(value, what: str, limit: int) -> str:
    text = str(value or "").strip()
    if not text:
        raise InvalidInput(f"{what}不能为空。", specs=[what])
    if len(text) > limit:
        raise InvalidInput(f"{what}「{text}」超过 {limit} 字。", specs=[text])
    return text


def _was(value) -> str | None:
    return None if value is None else str(value).strip() or None


def spec_tree_clean(raw) -> list[dict]:
    """The editor's tree checked: ``[{"name", "was", "values": [{"value", "was"}]}]`` with names
    and values trimmed. Raises InvalidInput (not a list, an empty or too long name / value, a name
    or a value twice, a spec without values, one ``was`` claimed twice, over :data:`MAX_SKUS`)."""
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        raise InvalidInput("规格数据格式不对，请刷新页面后重试。", specs=["format"])
    tree, total = [], 1
    for spec in raw:
        name = _text(spec.get("name"), "规格名", MAX_NAME)
        values = spec.get("values")
        if not isinstance(values, list) or not values:
            raise InvalidInput(f"规格「{name}」至少要有一个值。", specs=[name])
        items = [
            {"value": _text(v.get("value") if isinstance(v, dict) else v, "规格值", MAX_VALUE), "was": _was_of(v)}
            for v in values
        ]
        _unique([i["value"] for i in items], f"规格「{name}」的值")
        _unique([i["was"] for i in items if i["was"]], f"规格「{name}」的原值")
        tree.append({"name": name, "was": _was(spec.get("was")), "values": items})
        total *= len(items)
    _unique([s["name"] for s in tree], "规格名")
    _unique([s["was"] for s in tree if s["was"]], "原规格名")
    if total > MAX_SKUS:
        raise InvalidInput(f"规格组合共 {total} 个，最多 {MAX_SKUS} 个。", specs=[str(total)])
    return tree


def _was_of(value) -> str | None:
    return _was(value.get("was")) if isinstance(value, dict) else None


def _unique(items: list[str], what: str) -> None:
    seen = set()
    for item in items:
        if item in seen:
            raise InvalidInput(f"{what}「{item}」重复。", specs=[item])
        seen.add(item)


def tree_of_skus(skus: list[OldSku]) -> list[dict]:
    """The tree the live SKUs imply (names and values in first-seen order, by id): the starting
    point of a product that has no stored tree yet."""
    dims: dict[str, list[str]] = {}
    for sku in sorted(skus, key=lambda s: s.id):
        if not sku.is_active:
            continue
        for name, value in sku.specs.items():
            values = dims.setdefault(name, [])
            if value not in values:
                values.append(value)
    return [{"name": name, "values": values} for name, values in dims.items()]


def combinations(tree: list[dict]) -> list[dict[str, str]]:
    """Every combination of a clean tree as a specs dict, in entry order; ``[]`` for no specs."""
    if not tree:
        return []
    names = [s["name"] for s in tree]
    values = [[v["value"] if isinstance(v, dict) else v for v in s["values"]] for s in tree]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]


def _project(sku: OldSku, tree: list[dict]) -> tuple[dict[str, str] | None, int]:
    """Where ``sku`` lands in the new tree: (specs, rank), or (None, 0) when one of its values
    was removed. A spec added (or one the SKU never had) gives it the spec's first value.
    ``rank``: how many of its spec names are dropped (SKUs collapsing into one combination: the
    one losing the fewest, then the lowest id, stays)."""
    specs: dict[str, str] = {}
    for spec in tree:
        if spec["was"] is None or spec["was"] not in sku.specs:
            specs[spec["name"]] = spec["values"][0]["value"]
            continue
        old = sku.specs.get(spec["was"])
        match = next((v["value"] for v in spec["values"] if v["was"] is not None and v["was"] == old), None)
        if match is None:
            return None, 0
        specs[spec["name"]] = match
    return specs, len(set(sku.specs) - {s["was"] for s in tree})


def _key(specs: dict[str, str]) -> tuple:
    return tuple(sorted(specs.items()))


def spec_plan(skus: list[OldSku], raw_tree) -> Plan:
    """The plan for ``skus`` (all of the product's, live and switched off) under the edited tree
    (see the module). Raises InvalidInput from :func:`spec_tree_clean`. No specs at all is one
    combination, ``{}`` (a product sold without specs: one SKU)."""
    tree = spec_tree_clean(raw_tree)
    plan = Plan(tree=[{"name": s["name"], "values": [v["value"] for v in s["values"]]} for s in tree])
    landing: dict[tuple, list[tuple[tuple, OldSku]]] = {}
    for sku in skus:
        specs, rank = _project(sku, tree)
        if specs is not None:
            landing.setdefault(_key(specs), []).append(((not sku.is_active, rank, sku.id), sku))
    used: set[int] = set()
    for specs in combinations(tree) or [{}]:
        found = sorted(landing.get(_key(specs), []), key=lambda item: item[0])
        if found:
            winner = found[0][1]
            used.add(winner.id)
            if winner.specs == specs:
                plan.keep.append(winner.id)
            else:
                plan.rename.append((winner.id, specs))
            continue
        dormant = next(
            (s for s in sorted(skus, key=lambda s: s.id) if not s.is_active and s.id not in used and s.specs == specs),
            None,
        )
        if dormant is not None:
            used.add(dormant.id)
            plan.revive.append(dormant.id)
        else:
            plan.create.append(specs)
    plan.deactivate = [s.id for s in sorted(skus, key=lambda s: s.id) if s.is_active and s.id not in used]
    return plan
