"""The role table (portal/roles.py) is the only place that says which role may do what.

These tests keep it that way: the table covers every role, each capability guards something,
every capability a view declares exists, and no other module or template lists roles itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import AnonymousUser
from django.urls import URLPattern, URLResolver, get_resolver

from portal.roles import CAPABILITIES, Role, capabilities_of, may, role_may, roles_that_may

ROOT = Path(__file__).resolve().parents[2]
APP_DIRECTORIES = ("portal", "inventory", "jobs", "fabric", "faults", "telemetry", "console")
ROLE_TABLE = ROOT / "portal" / "roles.py"
# Modules that still hold a role set, each with the reason it may for now.
NOT_YET_ASKING_BY_CAPABILITY: dict[str, str] = {}


def project_python_files():
    for directory in (*APP_DIRECTORIES, "tests", "bench", "scripts"):
        for path in sorted((ROOT / directory).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_every_role_has_a_capability_and_every_row_names_roles():
    for capability, (roles, meaning) in CAPABILITIES.items():
        assert roles, f"{capability}: no role has it"
        assert meaning.strip(), f"{capability}: say what it lets a role do"
        assert all(isinstance(role, Role) for role in roles), capability
        assert len(set(roles)) == len(roles), f"{capability}: a role is listed twice"
    for role in Role:
        assert any(capabilities_of(role).values()), f"{role}: the table grants it nothing"


def test_each_capability_guards_something():
    """A capability no view, selector, template or check asks for is a dead row."""
    sources = [path.read_text() for directory in APP_DIRECTORIES
               for path in (ROOT / directory).rglob("*.py") if path != ROLE_TABLE]
    sources += [path.read_text() for path in (ROOT / "templates").rglob("*.html")]
    text = "\n".join(sources)
    unused = [
        capability for capability in CAPABILITIES
        if not re.search(rf"""["']{capability}["']|\bmay\.{capability}\b""", text)
    ]
    assert not unused, f"capabilities nothing asks for: {unused}"


def _declared_capabilities(view_class) -> list[str]:
    declared = [getattr(view_class, name, None)
                for name in ("capability", "read_capability", "write_capability")]
    declared += list(getattr(view_class, "action_capabilities", {}).values())
    return [capability for capability in declared if capability is not None]


def test_every_capability_a_view_declares_is_in_the_table():
    problems = []

    def walk(patterns) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns)
            elif isinstance(pattern, URLPattern):
                view_class = getattr(pattern.callback, "view_class",
                                     getattr(pattern.callback, "cls", None))
                for capability in _declared_capabilities(view_class):
                    if capability not in CAPABILITIES:
                        problems.append(f"{pattern.name}: {capability!r}")

    walk(get_resolver().url_patterns)
    assert not problems, f"views declare capabilities the table lacks: {problems}"


def _is_role_member(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "Role")


def _lists_roles(node: ast.AST) -> bool:
    """A literal collection of Role members, or the Role enum itself."""
    if isinstance(node, ast.Name) and node.id == "Role":
        return True
    return isinstance(node, (ast.Set, ast.List, ast.Tuple)) and any(
        _is_role_member(element) for element in node.elts
    )


def role_sets_in(tree: ast.AST) -> list[int]:
    """Lines that build a set of roles: `{Role.A, Role.B}`, `frozenset(Role)`,
    `set([Role.A])`, or ask `role in (Role.A, Role.B)`."""
    return sorted({node.lineno for node in ast.walk(tree) if _builds_role_set(node)})


def _builds_role_set(node: ast.AST) -> bool:
    if isinstance(node, ast.Set):
        return any(_is_role_member(element) for element in node.elts)
    if isinstance(node, ast.Call):
        return (isinstance(node.func, ast.Name) and node.func.id in ("set", "frozenset")
                and bool(node.args) and _lists_roles(node.args[0]))
    if isinstance(node, ast.Compare):
        return any(
            isinstance(operator, (ast.In, ast.NotIn)) and _lists_roles(comparator)
            for operator, comparator in zip(node.ops, node.comparators, strict=True)
        )
    return False


def test_the_role_set_finder_finds_each_form():
    found = role_sets_in(ast.parse(
        "A = frozenset({Role.ADMIN, Role.OPERATOR})\n"
        "B = set(Role)\n"
        "ok = user.role in (Role.ADMIN, Role.OPERATOR)\n"
        "C = {Switch.Role.LEAF, NIC.Role.RAIL}\n"
        "order = (Role.ADMIN, Role.VIEWER)\n"
        "names = {role.value for role in Role}\n"
    ))
    assert found == [1, 2, 3]


def test_no_module_but_the_role_table_lists_roles():
    offenders = []
    for path in project_python_files():
        relative = path.relative_to(ROOT).as_posix()
        if path == ROLE_TABLE or relative in NOT_YET_ASKING_BY_CAPABILITY:
            continue
        offenders += [f"{relative}:{line}" for line in role_sets_in(ast.parse(path.read_text()))]
    assert not offenders, (
        "role sets outside portal/roles.py (add a capability there and ask may()): "
        f"{offenders}"
    )


def test_no_template_compares_roles():
    comparison = re.compile(r"""user_role\s*(==|!=|\bin\b)|user\.role\b|["'](tenant_admin|"""
                            r"""oncall|operator)["']\s*(==|!=)""")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if comparison.search(line)
    ]
    assert not offenders, f"templates that compare roles (use may.<capability>): {offenders}"


def test_the_readme_shows_the_table_as_it_is():
    readme = (ROOT / "README.md").read_text()
    header = "| capability | " + " | ".join(role.value for role in Role) + " | lets a role |"
    rows = [
        f"| `{capability}` | " + " | ".join("✓" if role in roles else "" for role in Role)
        + f" | {meaning} |"
        for capability, (roles, meaning) in CAPABILITIES.items()
    ]
    table = [line for line in readme.splitlines() if line.startswith("| `")]
    assert header in readme
    assert [line for line in table if line in rows] == rows, "README.md: regenerate the role table"
    stale = [line for line in table if line.split("`")[1] in CAPABILITIES and line not in rows]
    assert not stale, f"README.md rows that disagree with portal/roles.py: {stale}"


@pytest.mark.parametrize("role", list(Role))
def test_may_reads_the_table(role):
    for capability in CAPABILITIES:
        user = SimpleNamespace(role=role, is_authenticated=True)
        assert may(user, capability) == (role in roles_that_may(capability))
        assert capabilities_of(role)[capability] == role_may(role, capability)


def test_nobody_without_a_role_may_do_anything():
    for capability in CAPABILITIES:
        assert not may(AnonymousUser(), capability)
        assert not may(None, capability)
        assert not may(SimpleNamespace(role=None, is_authenticated=True), capability)


def test_an_unknown_capability_is_an_error_not_a_refusal():
    with pytest.raises(ValueError, match="unknown capability"):
        may(SimpleNamespace(role=Role.ADMIN), "drian")
    with pytest.raises(ValueError, match="unknown capability"):
        may(AnonymousUser(), "drian")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("groups", "superuser", "active", "expected"),
    [
        (["operator"], False, True, Role.OPERATOR),
        (["tenant_admin", "unrelated"], False, True, Role.TENANT_ADMIN),
        (["operator", "viewer"], False, True, None),  # ambiguous: denied, not guessed
        ([], False, True, None),
        ([], True, True, Role.ADMIN),
        (["operator"], False, False, None),
    ],
)
def test_an_api_token_brings_its_users_role_in_the_same_query(
    make_user, groups, superuser, active, expected
):
    """Every API request needs the caller's role: it is read with the token, not by a query of
    its own, and means what `User.role` means."""
    from django.contrib.auth.models import Group
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from portal.authentication import user_for_token_key
    from portal.models import User
    from portal.services.accounts import api_token_create

    user = make_user(Role.VIEWER)
    _, key = api_token_create(user=user, name="role check")
    user.groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])
    User.objects.filter(pk=user.pk).update(is_superuser=superuser, is_active=active)
    user_for_token_key(key)  # stamps the token's first use
    with CaptureQueriesContext(connection) as queries:
        found = user_for_token_key(key)
    if not active:
        assert found is None
        return
    assert found.role == expected == User.objects.get(pk=user.pk).role
    assert len(queries) == 1
