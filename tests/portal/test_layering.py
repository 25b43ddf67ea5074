"""The apps are layered (README.md, "Where things live"): each may use only the apps below it.

The order is declared once, as import-linter's layers contract in pyproject.toml. Python imports
are checked by import-linter itself, lazy imports inside functions included; templates add arrows
of their own (`{% load %}` of another app's tag library, `{% include %}` or `{% extends %}` of
another app's template), which the small walker below holds to the same order.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

from django.conf import settings
from django.template.backends.django import get_installed_libraries
from django.template.base import Lexer, TokenType
from django.template.utils import get_app_template_dirs

ROOT = Path(__file__).resolve().parents[2]


def app_layers() -> list[str]:
    """The apps from the bottom layer up, as the import contract declares them."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    apps = next(contract for contract in contracts["contracts"] if contract["id"] == "apps")
    return list(reversed(apps["layers"]))


LAYERS = app_layers()
RANK = {app: rank for rank, app in enumerate(LAYERS)}


def test_python_imports_keep_the_layers_contract():
    result = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache", "pyproject.toml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def template_dirs() -> list[Path]:
    """Every directory of this project that Django's template loaders search."""
    dirs = [Path(directory) for directory in settings.TEMPLATES[0]["DIRS"]]
    dirs += [Path(directory) for directory in get_app_template_dirs("templates")]
    return [directory for directory in dirs if directory.is_relative_to(ROOT)]


def apps_naming_templates() -> dict[str, set[str]]:
    """Template name -> the apps whose Python code names it (views, inclusion tags, panels)."""
    named = defaultdict(set)
    for app in RANK:
        for path in (ROOT / app).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and str(node.value).endswith(".html"):
                    named[node.value].add(app)
    return named


def folder_owner(path: Path) -> str:
    """The app whose directory holds a template, else its first folder under templates/; shared
    ones (base.html, registration/, the error pages) belong to portal."""
    relative = path.relative_to(ROOT)
    if relative.parts[0] in RANK:
        return relative.parts[0]
    folder = relative.parts[1] if len(relative.parts) > 2 else ""
    return folder if folder in RANK else "portal"


def owner_of(name: str, path: Path, named: dict[str, set[str]]) -> str:
    """A template belongs to the app that renders it, wherever it is kept (a console page may
    sit under templates/portal/); one no code names, a partial, to the app that keeps it."""
    if name in named:
        return min(named[name], key=RANK.__getitem__)
    return folder_owner(path)


def tag_library_owners() -> dict[str, str]:
    """Tag library name -> the app whose templatetags package defines it (ours only)."""
    return {
        name: module.split(".")[0]
        for name, module in get_installed_libraries().items()
        if module.split(".")[0] in RANK
    }


def template_arrows(source: str) -> list[tuple[str, str]]:
    """("loads", library), ("includes", name) or ("extends", name) for each tag naming them;
    an include of a variable ({% include panel %}) is a registered panel, checked where it is
    registered, in Python."""
    arrows = []
    for token in Lexer(source).tokenize():
        if token.token_type != TokenType.BLOCK:
            continue
        bits = token.split_contents()
        if bits[0] == "load":
            libraries = bits[bits.index("from") + 1 :] if "from" in bits else bits[1:]
            arrows += [("loads", library) for library in libraries]
        elif bits[0] in ("include", "extends") and len(bits) > 1 and bits[1][0] in "\"'":
            arrows.append(({"include": "includes"}.get(bits[0], bits[0]), bits[1][1:-1]))
    return arrows


def found_in(directories: list[Path], name: str) -> Path | None:
    """Where the loaders find a template of this project (they search in this order)."""
    return next(
        (directory / name for directory in directories if (directory / name).exists()), None
    )


def template_layer_violations() -> list[str]:
    directories = template_dirs()
    libraries = tag_library_owners()
    named = apps_naming_templates()
    violations = []
    for directory in directories:
        for path in sorted(directory.rglob("*.html")):
            owner = owner_of(str(path.relative_to(directory)), path, named)
            for kind, name in template_arrows(path.read_text()):
                if kind == "loads":
                    used = libraries.get(name)
                else:
                    found = found_in(directories, name)
                    # None: Django's own template, or a library's
                    used = owner_of(name, found, named) if found else None
                if used is not None and RANK[used] > RANK[owner]:
                    violations.append(f"{path.relative_to(ROOT)} ({owner}) {kind} {name} ({used})")
    return violations


def test_templates_load_and_include_only_their_layer_or_below():
    assert template_layer_violations() == []


def test_panels_fill_slots_that_pages_offer_from_the_slots_layer_or_above():
    """A page of a lower app shows a higher app's panel through a slot (portal/ui_panels.py):
    a slot no page offers is a typo, and a panel from below would not need one."""
    from portal.ui_panels import registered_slots

    directories = template_dirs()
    named = apps_naming_templates()
    offered = {
        slot
        for directory in directories
        for path in directory.rglob("*.html")
        for slot in re.findall(r"""["']([\w.]+)["']\|panels""", path.read_text())
    }
    assert registered_slots(), "no app registered a panel: AppConfig.ready() did not run?"
    for slot, templates in registered_slots().items():
        assert slot in offered, f"no page offers the slot {slot}"
        for name in templates:
            found = found_in(directories, name)
            assert found, f"{name} (in {slot}) does not exist"
            owner = owner_of(name, found, named)
            assert RANK[owner] >= RANK[slot.split(".")[0]], f"{name} ({owner}) in {slot}"


def test_the_template_walker_sees_loads_includes_and_extends():
    arrows = template_arrows(
        '{% extends "base.html" %}{% load static jobs_tags %}{% load byte_rate from fabric_tags %}'
        '{% include "faults/_severity.html" with severity=1 %}{% include panel %}'
    )
    assert arrows == [
        ("extends", "base.html"),
        ("loads", "static"),
        ("loads", "jobs_tags"),
        ("loads", "fabric_tags"),
        ("includes", "faults/_severity.html"),
    ]
    assert tag_library_owners()["telemetry_tags"] == "telemetry"
    templates = ROOT / "templates"
    named = {"portal/dashboard.html": {"console"}}
    assert owner_of("jobs/_job_state.html", templates / "jobs" / "_job_state.html", named) == "jobs"
    assert owner_of("base.html", templates / "base.html", named) == "portal"
    assert owner_of("portal/dashboard.html", templates / "portal" / "dashboard.html", named) == (
        "console"
    )
    in_app = ROOT / "console" / "templates" / "console" / "_impact.html"
    assert owner_of("console/_impact.html", in_app, named) == "console"
