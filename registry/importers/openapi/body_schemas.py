"""Object schemas of request bodies: ``properties`` and ``required`` checked, ``allOf`` merged."""

from __future__ import annotations

from typing import Any

from registry.importers.specs import kind_of
from registry.schema_rows import SchemaProblem


def _object_parts(schema: dict, at: str) -> tuple[dict, list]:
    """``properties`` and ``required`` of an object schema, checked (``SchemaProblem``)."""
    properties = schema.get("properties")
    if properties is None:
        properties = {}
    if not isinstance(properties, dict):
        raise SchemaProblem(
            f"'properties' must be a mapping of names to schemas, found {kind_of(properties)}",
            f"{at}/properties",
        )
    required = schema.get("required")
    if required is None:
        required = []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        found = kind_of(required) if not isinstance(required, list) else "other items"
        raise SchemaProblem(
            f"'required' must be a list of property names (strings), found {found}",
            f"{at}/required",
        )
    return properties, required


def _flatten_object(schema: dict, at: str) -> dict:
    """Merge ``allOf`` members into one object schema (properties and required).

    ``at`` is the schema's path; a malformed ``properties`` or ``required``
    raises ``SchemaProblem`` with the path of the offending key.
    """
    members = schema.get("allOf")
    own_properties, own_required = _object_parts(schema, at)
    if members is None:
        return schema
    if not isinstance(members, list):
        raise SchemaProblem(f"'allOf' must be a list of schemas, found {kind_of(members)}", at)
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    properties = dict(own_properties)
    required = list(own_required)
    for index, member in enumerate(members):
        if isinstance(member, dict):
            member = _flatten_object(member, f"{at}/allOf/{index}")
            properties.update(member.get("properties") or {})
            required += [r for r in member.get("required") or [] if r not in required]
    merged["properties"] = properties
    if required:
        merged["required"] = required
    merged.setdefault("type", "object")
    return merged
