"""The input schema MCP lists for a tool synced from an MCP server: the server's own.

The registry keeps a tool's inputs as rows, one per top-level property, with local
``$ref``s inlined (``registry.schema_rows``): what calls are validated
against. A server's schema may say the same thing with ``$defs`` and ``$ref``s, and a
client (or the model behind it) is owed the schema as its author wrote it. So while a
synced tool's rows are still exactly what its approved definition's schema gives (a
sync writes them from it; an edit of a parameter since makes them differ), MCP lists
that schema verbatim; otherwise the registry's. Checked per listing, against rows
derived from the approved schema once per schema (kept in memory).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from registry.canonical import canonical_json
from registry.schema import parameter_schema
from registry.schema_rows import SchemaProblem, schema_to_rows

_REFERENCING = ("$defs", "definitions", "$ref")


def given_input_schema(tool, listed: dict) -> dict | None:
    """The server's own input schema of ``tool`` when it says what ``listed`` (the schema
    the registry's rows give) says and is worth listing instead (it references
    definitions); None otherwise."""
    if tool.approved_definition_source != "mcp_server" or tool.quarantined_at is not None:
        return None
    given = (tool.approved_definition or {}).get("input_schema")
    if not isinstance(given, dict):
        return None
    text = canonical_json(given)  # once: this runs for every synced tool of every listing
    if not any(k in text for k in _REFERENCING):
        return None
    expected = _rows_of(text)
    actual = canonical_json(
        {"properties": listed.get("properties") or {}, "required": listed.get("required") or []}
    )
    return given if expected == actual else None


@lru_cache(maxsize=1024)
def _rows_of(given_json: str) -> str | None:
    """What the registry's rows give for a schema (canonical), as the sync writes them."""
    try:
        rows = schema_to_rows(json.loads(given_json), warnings=[])
    except SchemaProblem:
        return None
    properties: dict[str, Any] = {}
    required = []
    for row in rows:
        properties[row["name"]] = parameter_schema(
            row.get("type", "string"),
            row.get("json_schema"),
            row.get("description") or "",
            has_default="default" in row,
            default=row.get("default"),
        )
        if row.get("required"):
            required.append(row["name"])
    return canonical_json({"properties": properties, "required": required})
