"""Imports point down the floors of docs/architecture.md: core/ is the ground floor, envs/ and
algos/ stand on it, the run layer, sweeps and the command on top. Every import statement counts,
those inside functions too (a lazy import is still a dependency)."""

from __future__ import annotations

import ast

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "purerl"

FORBIDDEN = {
    "core": {"algos", "envs", "run", "cli", "search", "options", "presets", "api"},
    "envs": {"algos", "run", "cli", "search", "options", "presets", "api"},
    "algos": {"options", "run", "cli", "search", "api"},
    "presets": {"options", "run", "cli", "search", "api"},
}
"""What each floor may not import (a top-level name of the package)."""


def imported_floors(path) -> dict[str, int]:
    """The purerl subpackages or modules a file imports, each with the first line doing so."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "purerl":  # from purerl import algos, envs
                names = [f"purerl.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "purerl" and len(parts) > 1:
                found.setdefault(parts[1], node.lineno)
    return found


@pytest.mark.parametrize("floor", sorted(FORBIDDEN))
def test_imports_point_down(floor):
    offences = [
        f"{path.relative_to(ROOT)}:{line} imports purerl.{target}"
        for path in sorted((PACKAGE / floor).rglob("*.py"))
        for target, line in imported_floors(path).items()
        if target in FORBIDDEN[floor]
    ]
    assert not offences, "\n".join(offences)


def test_the_checker_sees_lazy_and_package_imports(tmp_path):
    source = tmp_path / "module.py"
    source.write_text(
        "from purerl import algos, config\n"
        "def f():\n"
        "    import purerl.run.session\n"
        "    from purerl.options import RunOptions\n"
    )
    assert imported_floors(source) == {"algos": 1, "config": 1, "run": 3, "options": 4}
