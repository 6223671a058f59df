"""Tool lists in the shapes LLM providers expect (OpenAI, Anthropic, Gemini, MCP) or raw.

Each tool is listed under its own name wherever the provider takes it, else
under one no other tool can have (``provider_name``), which a call may name
too; ``name_map`` maps each listed name back to the ToolHub tool. Schemas are
made valid for each provider (Gemini's subset: ``registry/gemini_schema.py``).
Parameters that carry per-call secrets (keys of the HTTP tool's
``headers_input_map``) are marked so agents know to pass them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import re
from typing import Any

from registry.gemini_schema import gemini_parameters
from registry.listed_schema import given_input_schema
from registry.schema import tool_output_schema

logger = logging.getLogger(__name__)
FORMATS = ("openai", "anthropic", "gemini", "mcp", "raw")

# Each provider's rule for function names.
_NAME_RULES = {
    "openai": (re.compile(r"[^a-zA-Z0-9_-]"), 64, False),
    "anthropic": (re.compile(r"[^a-zA-Z0-9_-]"), 64, False),
    # Gemini: start with a letter or underscore; letters, digits, '_', '.', '-'; at most 64.
    "gemini": (re.compile(r"[^a-zA-Z0-9_.-]"), 64, True),
    "mcp": (re.compile(r"[^a-zA-Z0-9_.-]"), 128, False),
    "raw": (re.compile(r"[^a-zA-Z0-9_-]"), 64, False),
}
SECRET_MARK = "x-toolhub-secret"  # noqa: S105 - a schema key, not a secret
SECRET_NOTE = "Per-call secret: sent to the upstream as a header, never stored or echoed."  # noqa: S105


# A tool Gemini cannot list under its own name (one that starts with a digit or '-')
# is listed as this + its name: '_' because Gemini wants a letter or '_' first, and
# '.' because no tool name has one, so the name stands for that tool and no other.
RENAMED = "_."
# A renamed name too long for the format keeps the start of the tool's name and ends
# in this many hex digits of its digest.
_DIGEST_LENGTH = 16


def provider_name(name: str, fmt: str) -> str:
    """``name`` as format ``fmt`` lists it: the tool's own name wherever the format takes it,
    otherwise a name that POST /executions takes too (``tool_names_listed_as``)."""
    pattern, limit, letter_first = _NAME_RULES[fmt]
    first_ok = not letter_first or re.match(r"[A-Za-z_]", name)
    if name and first_ok and len(name) <= limit and not pattern.search(name):
        return name
    if pattern.search("."):  # no '.' in this format: only a name no tool may have gets here
        return (pattern.sub("_", name) or "tool")[:limit]
    renamed = RENAMED + pattern.sub("_", name)
    if len(renamed) <= limit:
        return renamed
    digest = hashlib.sha256(name.encode()).hexdigest()[:_DIGEST_LENGTH]
    return f"{renamed[: limit - _DIGEST_LENGTH - 1]}.{digest}"


def renamed_lookup(given: str) -> dict | None:
    """A ``Tool`` filter that finds the tools a format may list as ``given`` when that is not
    their own name (``provider_name`` tells which of them it is), or None: ``given`` is
    no such name."""
    if not given.startswith(RENAMED) or len(given) > max(r[1] for r in _NAME_RULES.values()):
        return None
    start, digest, _ = given[len(RENAMED) :].partition(".")
    return {"name__startswith": start} if digest else {"name": start}


def secret_parameters(tool) -> list[str]:
    """Input names whose values are per-call secrets (HTTP ``headers_input_map`` keys)."""
    configs = getattr(tool, "_prefetched_objects_cache", {}).get("configs")
    if configs is None:
        configs = tool.configs.all()
    for config in configs:
        if config.config_key == "headers_input_map" and not config.is_secret:
            mapping = config.plain_value
            if isinstance(mapping, str):
                try:
                    mapping = json.loads(mapping)
                except ValueError:
                    return []
            if isinstance(mapping, dict):
                return sorted(str(k) for k in mapping)
    return []


def _marked_schema(tool) -> tuple[dict, list[str]]:
    schema = copy.deepcopy(tool.input_schema())
    secrets = secret_parameters(tool)
    for name in secrets:
        prop = schema.get("properties", {}).get(name)
        if prop is not None:
            prop[SECRET_MARK] = True
            described = prop.get("description", "").strip()
            if described and described[-1] not in ".!?:":
                described += "."  # "session token" + note read as one sentence otherwise
            prop["description"] = f"{described} {SECRET_NOTE}".strip()
    return schema, secrets


def _without_dialect(schema: dict) -> dict:
    return {k: v for k, v in schema.items() if k != "$schema"}


def _with_array_items(schema: Any) -> Any:
    """``schema`` with ``items: {}`` (any item, as without it) on every array that has no
    ``items``: OpenAI refuses such an array ("array schema missing items")."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _with_array_items(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_with_array_items(sub) for sub in value]
        elif key in _SCHEMAS:
            out[key] = _with_array_items(value)
    kinds = schema.get("type")
    if "array" in (kinds if isinstance(kinds, list) else [kinds]) and "items" not in schema:
        out["items"] = {}
    return out


# Where JSON Schema keywords hold schemas: by name, in a list, or one.
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
_SCHEMA_LISTS = {"anyOf", "oneOf", "allOf", "prefixItems"}
_SCHEMAS = {"items", "additionalProperties", "not", "if", "then", "else", "contains"}
_SCHEMAS |= {"propertyNames", "unevaluatedItems", "unevaluatedProperties"}


# Tool metadata -> MCP annotations: ``safety`` says which hints hold; explicit keys
# (``read_only``, ``destructive``, ``idempotent``, ``open_world``) win over it.
_SAFETY_HINTS = {
    "read_only": {"readOnlyHint": True, "destructiveHint": False},
    "safe": {"readOnlyHint": False, "destructiveHint": False},
    "destructive": {"readOnlyHint": False, "destructiveHint": True},
}
_HINT_KEYS = {
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
}


def mcp_annotations(metadata: dict) -> dict:
    """The MCP tool annotations the tool's metadata says (only hints it states)."""
    hints = dict(_SAFETY_HINTS.get(str(metadata.get("safety")), {}))
    for key, hint in _HINT_KEYS.items():
        if isinstance(metadata.get(key), bool):
            hints[hint] = metadata[key]
    return hints


def mcp_tool(tool, name: str, description: str, schema: dict) -> dict:
    """One tool as MCP's tools/list lists it: its schemas valid JSON Schema 2020-12 with
    their ``$schema``, and a synced tool's input schema as its server gave it while the
    registry's inputs still say the same (``registry.listed_schema``)."""
    given = given_input_schema(tool, schema)
    entry: dict[str, Any] = {
        "name": name,
        "description": description,
        "inputSchema": given if given is not None else schema,
    }
    metadata = tool.tool_metadata or {}
    title = metadata.get("title")
    if isinstance(title, str) and title.strip():
        entry["title"] = title.strip()
    output = tool_output_schema(tool)
    if output is not None:
        entry["outputSchema"] = output
    annotations = mcp_annotations(metadata)
    if "title" in entry:
        annotations["title"] = entry["title"]
    if annotations:
        entry["annotations"] = annotations
    return entry


def render(tools, fmt: str) -> dict:
    """The caller's tools in format ``fmt``: ``{"format", "tools", "name_map"}``."""
    items: list[dict] = []
    name_map: dict[str, dict] = {}
    for tool in tools:
        name = provider_name(tool.name, fmt)
        if name in name_map:  # two names no tool may have (written past validation)
            logger.warning("Tool %s not listed for %s: its name is taken.", tool.pk, fmt)
            continue
        name_map[name] = {"tool_id": str(tool.pk), "tool_name": tool.name}
        schema, secrets = _marked_schema(tool)
        description = tool.description or tool.name
        if fmt == "openai":
            items.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": description,
                        "parameters": _with_array_items(_without_dialect(schema)),
                    },
                }
            )
        elif fmt == "anthropic":
            items.append(
                {"name": name, "description": description, "input_schema": _without_dialect(schema)}
            )
        elif fmt == "gemini":
            declaration = {"name": name, "description": description}
            parameters = gemini_parameters(schema)
            if parameters is not None:
                declaration["parameters"] = parameters
            items.append(declaration)
        elif fmt == "mcp":
            items.append(mcp_tool(tool, name, description, schema))
        else:
            items.append(
                {
                    "id": str(tool.pk),
                    "name": tool.name,
                    "description": tool.description,
                    "type": tool.type,
                    "version": tool.version,
                    "tool_metadata": tool.tool_metadata,
                    "requires_approval": tool.requires_approval,
                    "input_schema": schema,
                    "secret_parameters": secrets,
                }
            )
    if fmt == "gemini":
        return {"format": fmt, "tools": [{"functionDeclarations": items}], "name_map": name_map}
    return {"format": fmt, "tools": items, "name_map": name_map}
