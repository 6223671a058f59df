"""What the reference says about the code is true: every file path and every dotted name
that docs/*.md and docs/decisions/*.md cite exists.

- A path with a directory (``executions/services/pipeline.py``, ``bench/README.md``)
  names a file or directory of the repository, from its root or from the document's
  own directory (a link such as ``decisions/0003-wire-transport.md``). A path right
  after ``COMMIT:`` (``git show 6896f88:executions/executors/wire.py``) names a file of
  that commit and is not checked.
- A bare file name (``rows.py``) names a file somewhere in the repository.
- A dotted name that starts with one of ToolHub's packages
  (``executions.services.dispatch.runs_inline``, ``toolhub.asgi:application``) is a
  module and the attributes it names; or a name the code spells out as a string (a
  Celery task, a span or its attribute, a PostgreSQL setting); or a Django label: a
  model (``registry.verificationrun``), a permission (``registry.grant_tool``), a
  migration (``registry.0013``).
"""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([*ROOT.glob("docs/*.md"), *ROOT.glob("docs/decisions/*.md")])
PACKAGES = ("toolhub", "registry", "executions", "tests")

# Bare file names a document cites for what is no longer there, and why that is true.
HISTORICAL = {
    "wire.py": "decision 0003 records the transport httpcore replaced (git show 6896f88:…)",
}

PATH = re.compile(r"(?<![\w./:-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|toml|yml|yaml|txt|json))\b")
BARE_FILE = re.compile(r"(?<![\w./:-])([A-Za-z_][\w-]*\.py)\b(?![/\w])")
DOTTED_WORD = re.compile(r"\w+(?:\.\w+)+")
DOTTED = re.compile(rf"(?<![\w./:-])((?:{'|'.join(PACKAGES)})(?:\.\w+)+(?::\w+)?)")


def _citations(pattern: re.Pattern) -> list[tuple[str, str]]:
    return sorted(
        {
            (doc.relative_to(ROOT).as_posix(), m.group(1))
            for doc in DOCS
            for m in pattern.finditer(doc.read_text())
        }
    )


@cache
def _repository_file_names() -> frozenset[str]:
    skipped = {".git", ".venv", "node_modules", "var", "staticfiles", "__pycache__"}
    return frozenset(
        path.name for path in ROOT.rglob("*.py") if not skipped & set(path.relative_to(ROOT).parts)
    )


@cache
def _names_in_source() -> frozenset[str]:
    """Every dotted name the code of the three packages spells out in a string, docstrings
    aside (task, span and attribute names, a PostgreSQL setting inside SQL)."""
    found = set()
    for package in PACKAGES[:3]:
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            docstrings = {
                id(node.value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            }
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    if id(node) not in docstrings:
                        found |= set(DOTTED_WORD.findall(node.value))
    return frozenset(found)


@cache
def _django_labels() -> frozenset[str]:
    labels = {model._meta.label_lower for model in apps.get_models()}
    for model in apps.get_models():
        meta = model._meta
        codenames = [f"{action}_{meta.model_name}" for action in meta.default_permissions]
        codenames += [codename for codename, _ in meta.permissions]
        labels |= {f"{meta.app_label}.{codename}" for codename in codenames}
    for config in apps.get_app_configs():
        migrations = Path(config.path) / "migrations"
        labels |= {
            f"{config.label}.{p.name[:4]}" for p in migrations.glob("[0-9][0-9][0-9][0-9]_*.py")
        }
    return frozenset(labels)


def _resolves(dotted: str) -> bool:
    """A module, then attributes: the longest importable prefix must have the rest."""
    module_path, _, attribute = dotted.partition(":")
    parts = module_path.split(".") + ([attribute] if attribute else [])
    for split in range(len(module_path.split(".")), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for name in parts[split:]:
                target = getattr(target, name)
        except AttributeError:
            return False
        return True
    return False


def test_the_reference_cites_paths_and_names_the_scan_can_find():
    # The scan itself: it must see the citations it is meant to check.
    paths = {path for _, path in _citations(PATH)}
    assert {"executions/services/pipeline.py", "bench/README.md"} <= paths
    assert "decisions/0003-wire-transport.md" in paths
    assert "executions/executors/wire.py" not in paths  # cited as 6896f88:… only
    dotted = {name for _, name in _citations(DOTTED)}
    assert "executions.services.dispatch.runs_inline" in dotted
    assert not _resolves("executions.services.dispatch.no_such_function")
    assert not _resolves("registry.no_such_module.name")
    assert _resolves("toolhub.asgi:application")
    assert "toolhub.retention" in _names_in_source()  # a PostgreSQL setting, inside SQL
    assert "registry.authorization" not in _names_in_source()  # docstrings are not the code
    assert Permission._meta.label_lower in _django_labels()


@pytest.mark.parametrize(("doc", "path"), _citations(PATH))
def test_a_cited_path_exists(doc, path):
    assert (ROOT / path).exists() or (ROOT / doc).parent.joinpath(path).exists()


@pytest.mark.parametrize(("doc", "name"), _citations(BARE_FILE))
def test_a_cited_file_name_exists(doc, name):
    assert name in _repository_file_names() or name in HISTORICAL


@pytest.mark.parametrize(("doc", "name"), _citations(DOTTED))
def test_a_cited_dotted_name_exists(doc, name):
    assert name in _names_in_source() or name in _django_labels() or _resolves(name)
