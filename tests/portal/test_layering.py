"""`portal/` is the project and its cross-cutting parts; it imports no domain app (DESIGN.md
section 2, issue 15 item 6). Pages that compose the domain apps live in `console/`."""

from __future__ import annotations

import ast
from pathlib import Path

PORTAL = Path(__file__).resolve().parents[2] / "portal"
ABOVE_OR_BESIDE = {"inventory", "jobs", "fabric", "faults", "telemetry", "console"}


def imported_packages(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_portal_imports_no_domain_app():
    offenders = {
        str(path.relative_to(PORTAL.parent)): sorted(imported_packages(path) & ABOVE_OR_BESIDE)
        for path in PORTAL.rglob("*.py")
        if "migrations" not in path.parts and imported_packages(path) & ABOVE_OR_BESIDE
    }
    assert not offenders, offenders
