"""A tool's definition as the model reads it, its hash, and the difference between two.

The definition is what an LLM is shown about a tool: its name, description,
input and output schema and annotations. Tool poisoning hides instructions in
exactly these; a "rug pull" changes them after the tool was reviewed and
granted. ToolHub keeps the approved definition of each tool and its hash
(``Tool.approved_definition``), and quarantines a tool whose server shows another.

The hash is SHA-256 of the canonical JSON of the definition with numbers in the
form jsonb keeps them (``registry.canonical``): the same for a definition fresh
from a server and for one read back from the database. Pure functions: the MCP
executor imports this module to check a server's listing at call time.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from registry import schema
from registry.canonical import canonical_json, stored_form

DEFINITION_KEYS = ("name", "description", "input_schema", "output_schema", "annotations")


def remote_definition(item: Mapping[str, Any]) -> dict[str, Any]:
    """The definition of one tool of an MCP server's ``tools/list`` (as the client gives it)."""
    return {
        "name": str(item.get("name") or ""),
        "description": str(item.get("description") or ""),
        "input_schema": dict(item.get("input_schema") or {"type": "object"}),
        "output_schema": dict(item["output_schema"]) if item.get("output_schema") else None,
        "annotations": dict(item.get("annotations") or {}),
    }


def registry_definition(tool) -> dict[str, Any]:
    """The definition the registry itself holds for ``tool`` (its parameters give the schemas)."""
    return definition_from_rows(tool.name, tool.description, list(tool.parameters.all()))


def definition_from_rows(name: str, description: str, params: list) -> dict[str, Any]:
    """A definition from a tool's name, description and parameter rows (also for migrations)."""

    def of_kind(kind: str) -> list:
        return sorted(
            (p for p in params if p.parameter_type == kind), key=lambda p: (p.position, p.name)
        )

    outputs = of_kind(schema.OUTPUT_KIND)
    return {
        "name": name,
        "description": description or "",
        "input_schema": schema.schema_from_parameters(of_kind(schema.INPUT_KIND)),
        "output_schema": schema.schema_from_parameters(outputs) if outputs else None,
        "annotations": {},
    }


def definition_hash(definition: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the definition's canonical JSON."""
    text = canonical_json(stored_form({k: definition.get(k) for k in DEFINITION_KEYS}))
    return hashlib.sha256(text.encode()).hexdigest()


def _lines(definition: Mapping[str, Any] | None) -> list[str]:
    if not definition:
        return []
    shown = {k: definition.get(k) for k in DEFINITION_KEYS}
    return json.dumps(shown, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def definition_diff(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """A unified diff of two definitions, one JSON key a line, for people to read."""
    return list(
        difflib.unified_diff(_lines(old), _lines(new), "approved", "pending", n=3, lineterm="")
    )


def definition_diff_html(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str:
    """Side by side, as an HTML table (difflib escapes the text)."""
    return difflib.HtmlDiff(wrapcolumn=70).make_table(
        _lines(old), _lines(new), "approved", "pending", context=True, numlines=3
    )
