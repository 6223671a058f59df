"""A tool's input JSON Schema as Gemini's function declarations accept it.

Gemini reads a subset of OpenAPI 3.0, not JSON Schema: one ``type`` per schema
(``nullable`` for null, ``anyOf`` for a choice), ``enum`` only as strings of a
``string`` with format ``enum``, formats ``enum`` and ``date-time`` for strings
(``int32``/``int64``, ``float``/``double`` for numbers), objects with at least
one property and arrays with ``items``. One schema outside that subset and it
refuses the whole tool list.

So each schema is rewritten into the subset: an ``enum`` or a ``const`` becomes
a string enum, an object without properties or an array without ``items`` is
asked for as JSON text, and whatever the subset cannot say is written into the
description (as JSON Schema), never dropped. ToolHub validates every call
against the tool's full schema and turns these text forms back ("2" for an
integer, a JSON object given as text: ``executions/validation/``).
``additionalProperties: false`` is how Gemini reads every object already.
"""

from __future__ import annotations

import json
from typing import Any

_TYPES = ("string", "number", "integer", "boolean", "array", "object")
_FORMATS = {"string": {"date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}
# Constraints Gemini has, by type.
_KEPT = {
    "string": {"minLength", "maxLength", "pattern"},
    "number": {"minimum", "maximum"},
    "integer": {"minimum", "maximum"},
    "array": {"minItems", "maxItems"},
    "object": {"minProperties", "maxProperties"},
}
# JSON Schema keywords that apply to values of one type only.
_APPLIES = {
    "string": {"minLength", "maxLength", "pattern", "format"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "array": {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"},
    "object": {"properties", "required", "additionalProperties", "patternProperties"},
}
_APPLIES["array"] |= {"minContains", "maxContains", "unevaluatedItems"}
_APPLIES["object"] |= {"propertyNames", "minProperties", "maxProperties", "dependentRequired"}
_APPLIES["object"] |= {"dependentSchemas", "unevaluatedProperties"}
_APPLIES["integer"] = _APPLIES["number"]
_APPLIES["boolean"] = set()
_TYPE_SPECIFIC = set().union(*_APPLIES.values())
# Said for every schema (or only annotating: nothing a call must satisfy).
_DONE = {"type", "description", "default", "title"}
_ANNOTATIONS = {"$schema", "$id", "$anchor", "$comment", "$defs", "definitions", "examples"}
_ANNOTATIONS |= {"deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType"}
_AS_TEXT = {
    "object": "Give a JSON object, written as JSON text.",
    "array": "Give a JSON array, written as JSON text.",
}


def gemini_parameters(schema: dict) -> dict | None:
    """``parameters`` of a function declaration; None for a tool without inputs (Gemini
    refuses an object without properties)."""
    if not schema.get("properties"):
        return None
    return _convert(schema)


def _convert(node: Any) -> dict:
    if not isinstance(node, dict):  # a boolean schema: true takes anything, false nothing
        node = {} if node is not False else {"not": {}}
    kinds = node.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    nullable = "null" in kinds
    kinds = [k for k in kinds if k in _TYPES]
    if "const" in node or "enum" in node:
        out, rest, note = _enum(node, kinds)
    elif "anyOf" in node or "oneOf" in node:
        out, rest, note = _choice(node)
    elif len(kinds) > 1:
        out, rest, note = _union(node, kinds), {}, ""
    else:
        out, rest, note = _typed(node, kinds[0] if kinds else None, nullable)
    if nullable:
        out["nullable"] = True
    if isinstance(node.get("title"), str):
        out["title"] = node["title"]
    return _described(out, node, rest, note)


def _typed(node: dict, kind: str | None, nullable: bool) -> tuple[dict, dict, str]:
    """A schema of one type (None: only null, or no type said)."""
    rest: dict[str, Any] = {}
    done = set(_DONE)
    if kind is None and nullable:
        out: dict[str, Any] = {"type": "string"}
        note = "Only null."
    elif kind is None:  # no type said: any value, of the types Gemini can give
        out = {"anyOf": [{"type": t} for t in ("string", "number", "boolean")], "nullable": True}
        note = ""
    elif kind == "object" and isinstance(node.get("properties"), dict) and node["properties"]:
        out, note = _object(node, rest), ""
        done |= {"properties", "required"}
        if node.get("additionalProperties", False) is False:
            done.add("additionalProperties")
    elif kind == "array" and isinstance(node.get("items"), dict) and "prefixItems" not in node:
        out, note = {"type": "array", "items": _convert(node["items"])}, ""
        done.add("items")
    elif kind in _AS_TEXT:  # Gemini cannot say "any object" or "any array": asked as text
        out, note = {"type": "string"}, _AS_TEXT[kind]
    else:
        out, note = {"type": kind}, ""
        if node.get("format") in _FORMATS.get(kind, ()):
            out["format"] = node["format"]
            done.add("format")
    _leftover(node, kind, out, rest, done, _KEPT.get(out.get("type"), set()))
    return out, rest, note


def _object(node: dict, rest: dict) -> dict:
    properties = node["properties"]
    out = {"type": "object", "properties": {n: _convert(s) for n, s in properties.items()}}
    required = node.get("required") if isinstance(node.get("required"), list) else []
    if any(name in properties for name in required):
        out["required"] = [name for name in required if name in properties]
    missing = [name for name in required if name not in properties]
    if missing:  # Gemini requires only properties it knows of
        rest["required"] = missing
    return out


def _enum(node: dict, kinds: list[str]) -> tuple[dict, dict, str]:
    """A ``const`` or an ``enum``: Gemini takes only strings (format ``enum``)."""
    values = [node["const"]] if "const" in node else node["enum"]
    values = values if isinstance(values, list) else []
    texts = [v if isinstance(v, str) else json.dumps(v) for v in values if v is not None]
    out: dict[str, Any] = {"type": "string"}
    rest: dict[str, Any] = {}
    done = _DONE | {"const"} if "const" in node else _DONE | {"enum"}
    if texts:
        out.update(format="enum", enum=list(dict.fromkeys(texts)))
    else:  # only null
        rest["enum"] = values
    if None in values:
        out["nullable"] = True
    note = ""
    if kinds and "string" not in kinds:
        # "2" for 2: ToolHub turns the text back into the value the schema wants.
        note = f"A value of type {' or '.join(kinds)}, written as text."
    _leftover(node, kinds[0] if len(kinds) == 1 else None, out, rest, done, set())
    return out, rest, note


def _choice(node: dict) -> tuple[dict, dict, str]:
    """``anyOf`` (``oneOf`` read as ``anyOf``); what the node says besides goes into each branch."""
    key = "anyOf" if "anyOf" in node else "oneOf"
    shared = {k: v for k, v in node.items() if k not in _DONE - {"type"} | {"anyOf", "oneOf"}}
    branches = node[key] if isinstance(node[key], list) else []
    merged = [{**shared, **b} if isinstance(b, dict) else shared if b else b for b in branches]
    kept = [b for b in merged if not _only_null(b)]
    out: dict[str, Any] = {"anyOf": [_convert(b) for b in kept] or [{"type": "string"}]}
    if len(kept) < len(merged):
        out["nullable"] = True
    rest = {"oneOf": node["oneOf"]} if key == "anyOf" and "oneOf" in node else {}
    return out, rest, "Exactly one of the alternatives." if key == "oneOf" else ""


def _only_null(branch: Any) -> bool:
    return isinstance(branch, dict) and branch.get("type") in ("null", ["null"])


def _union(node: dict, kinds: list[str]) -> dict:
    """A list of types: one branch per type, each with the keywords of its type."""
    branches = []
    for kind in kinds:
        branch = {k: v for k, v in node.items() if k not in _DONE}
        branches.append(_convert({**branch, "type": kind}))
    return {"anyOf": branches}


def _leftover(node: dict, kind, out: dict, rest: dict, done: set, kept: set) -> None:
    """The keywords of ``node`` not said yet: in ``out`` where Gemini has them (``kept``),
    else in ``rest``. Those of another type than ``kind`` never apply: left out."""
    for key, value in node.items():
        if key in done or key in _ANNOTATIONS or key.startswith("x-"):
            continue
        if kind is not None and key in _TYPE_SPECIFIC and key not in _APPLIES[kind]:
            continue
        if key in kept:
            out[key] = value
        else:
            rest[key] = value


def _described(out: dict, node: dict, rest: dict, note: str) -> dict:
    """``out`` with the node's description, its default and what Gemini could not say."""
    parts = []
    description = node.get("description")
    if isinstance(description, str) and description.strip():
        text = description.strip()
        parts.append(text if text[-1] in ".!?:" else text + ".")
    if "default" in node:
        parts.append(f"Default: {json.dumps(node['default'])}.")
    if note:
        parts.append(note)
    if rest:
        parts.append(f"JSON Schema also requires: {json.dumps(rest, sort_keys=True)}.")
    if parts:
        out["description"] = " ".join(parts)
    return out
