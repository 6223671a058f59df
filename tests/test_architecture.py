"""The few places where a lower layer calls a higher one are hooks, each listed in
docs/development.md ("Layers and gates"); everything else is a plain import."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("toolhub", "registry", "executions")  # lowest first
GUIDE = ROOT / "docs" / "development.md"
HOOK_ROW = re.compile(r"^\| `(\w+)` \| `([\w.]+)` \| `(\w+)` \| (.+) \|$")


def _modules():
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            yield name.removesuffix(".__init__"), ast.parse(path.read_text(), str(path))


def hooks_in_code() -> dict[str, str]:
    """Every module-level ``*_register`` function: hook name -> the module that owns it."""
    return {
        node.name: module
        for module, tree in _modules()
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.endswith("_register")
    }


def hooks_in_guide() -> dict[str, tuple[str, str]]:
    """The guide's table: hook name -> (lower module, the app that registers it)."""
    rows = {}
    for line in GUIDE.read_text().splitlines():
        match = HOOK_ROW.match(line)
        if match:
            name, module, registrant, why = match.groups()
            assert why.strip(), f"the row of {name} does not say why an import cannot be used"
            rows[name] = (module, registrant)
    return rows


def _called_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def test_the_guide_lists_its_hooks():
    # Guards the parser: a reformatted table must not pass by matching nothing.
    assert len(hooks_in_guide()) >= 5


def test_every_hook_in_the_code_has_a_row_in_the_guide_and_every_row_a_hook():
    in_code = hooks_in_code()
    in_guide = hooks_in_guide()
    assert sorted(set(in_code) - set(in_guide)) == [], "hooks missing from docs/development.md"
    assert sorted(set(in_guide) - set(in_code)) == [], "rows of hooks no longer in the code"
    assert {name: in_code[name] for name in in_guide} == {
        name: module for name, (module, _) in in_guide.items()
    }


@pytest.mark.parametrize("name", sorted(hooks_in_guide()))
def test_a_hook_is_filled_by_a_higher_layer_in_its_apps_ready(name):
    module, registrant = hooks_in_guide()[name]
    owner = module.split(".")[0]
    # Within one layer, or from a higher one downwards, an import does the job.
    assert LAYERS.index(registrant) > LAYERS.index(owner), (name, owner, registrant)
    apps = ast.parse((ROOT / registrant / "apps.py").read_text())
    (ready,) = [
        node
        for node in ast.walk(apps)
        if isinstance(node, ast.FunctionDef) and node.name == "ready"
    ]
    assert name in _called_names(ready)


def test_no_app_replaces_an_admin_another_app_registered():
    # Only Django's own User and Group admins are replaced (by the registry's), and
    # django-allauth's: its app, token and e-mail pages are taken out (no secret or token
    # of single sign-on is kept in the database) and its accounts page replaced.
    replaced = sorted(
        (module, ast.unparse(node.args[0]))
        for module, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "unregister"
        and ast.unparse(node.func.value) == "admin.site"
    )
    assert replaced == [
        ("registry.admin.roles", "Group"),
        ("registry.admin.sso", "EmailAddress"),
        ("registry.admin.sso", "SocialAccount"),
        ("registry.admin.sso", "SocialApp"),
        ("registry.admin.sso", "SocialToken"),
        ("registry.admin.users", "User"),
    ]


def test_the_tool_and_agent_pages_are_the_registrys_admins_with_what_executions_adds():
    from django.contrib import admin

    from executions.admin.tools import AgentAdminWithActivity, ToolAdminWithTestRun
    from registry.admin.agents import AgentAdmin
    from registry.admin.tools import ToolAdmin
    from registry.models import Agent, Tool

    assert type(admin.site._registry[Tool]) is ToolAdminWithTestRun
    assert issubclass(ToolAdminWithTestRun, ToolAdmin)
    assert type(admin.site._registry[Agent]) is AgentAdminWithActivity
    assert issubclass(AgentAdminWithActivity, AgentAdmin)
