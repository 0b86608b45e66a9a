"""Apps import only apps on LOWER layers (docs/DESIGN.md, RULES): every ``import`` and
``from ... import`` anywhere in a module of apps/ (inside functions too, relative imports
resolved) is checked against the declared order below."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APPS_DIR = Path(__file__).resolve().parent.parent / "apps"

# Lowest first; apps on one row may not import each other. Names of apps that do not exist
# yet are allowed (their row is already decided).
LAYERS: list[set[str]] = [
    {"alerts", "almanac", "files", "logistics", "shipping"},
    {"accounts"},
    {"catalog"},
    {"members", "appointments", "marketing", "content"},
    {"orders"},
    {"payments", "stores", "points_mall", "crm", "printing"},
    {"distribution"},
    {"chat", "reviews", "wechat_official"},
    {"backoffice"},
]
RANK = {app: row for row, apps in enumerate(LAYERS) for app in apps}


def _imported_modules(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """``(line, absolute dotted name)`` of every import in ``tree``; ``package`` is the module's
    package (``apps.orders.api``), used to resolve relative imports."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            if module == "apps":  # ``from apps import orders``
                found += [(node.lineno, f"apps.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, module))
    return found


def layer_violations(source: str, *, app: str, package: str, filename: str) -> list[str]:
    """The upward or sideways ``apps.X`` imports of one module of ``app``, as
    ``"<file>:<line>: <app> imports apps.<other> (layer ...)"``; [] when it keeps to the order."""
    errors = []
    own = RANK[app]
    for line, module in sorted(_imported_modules(ast.parse(source, filename=filename), package)):
        parts = module.split(".")
        if parts[0] != "apps" or len(parts) < 2 or parts[1] == app:
            continue
        other = parts[1]
        if other not in RANK:
            errors.append(f"{filename}:{line}: {app} imports {module} (apps.{other} is not in the layer order)")
        elif RANK[other] >= own:
            errors.append(f"{filename}:{line}: {app} imports {module} (layer {RANK[other]} >= its own {own})")
    return errors


def test_checker_flags_upward_sideways_and_relative_imports():
    source = (
        "from apps.accounts import services\n"  # below: fine
        "def f():\n"
        "    from apps.payments import services\n"  # above, inside a function
        "import apps.appointments.selectors\n"  # same row as marketing
        "from ... import payments\n"  # relative: apps.payments
        "from apps import backoffice\n"
    )
    errors = layer_violations(source, app="marketing", package="apps.marketing.api", filename="x.py")
    assert errors == [
        "x.py:3: marketing imports apps.payments (layer 5 >= its own 3)",
        "x.py:4: marketing imports apps.appointments.selectors (layer 3 >= its own 3)",
        "x.py:5: marketing imports apps.payments (layer 5 >= its own 3)",
        "x.py:6: marketing imports apps.backoffice (layer 8 >= its own 3)",
    ]
    assert (
        layer_violations(
            "from ..models import Order\nfrom . import services\n",
            app="orders",
            package="apps.orders.api",
            filename="y.py",
        )
        == []
    )


def _modules():
    for path in sorted(APPS_DIR.rglob("*.py")):
        rel = path.relative_to(APPS_DIR.parent)
        if len(rel.parts) < 3:  # apps/__init__.py
            continue
        yield path, rel.parts[1], ".".join(rel.parent.parts)


def test_every_app_is_in_the_layer_order():
    apps = {p.name for p in APPS_DIR.iterdir() if (p / "__init__.py").exists()}
    assert apps - RANK.keys() == set()


@pytest.mark.parametrize("app", sorted(p.name for p in APPS_DIR.iterdir() if (p / "__init__.py").exists()))
def test_apps_import_only_lower_layers(app):
    errors = []
    for path, owner, package in _modules():
        if owner == app:
            errors += layer_violations(
                path.read_text(encoding="utf-8"),
                app=app,
                package=package,
                filename=str(path.relative_to(APPS_DIR.parent)),
            )
    assert errors == [], "\n".join(errors)
