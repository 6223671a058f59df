"""Between JSON Schema objects and ``ToolParameter`` rows (one row per top-level property).

A row has one JSON ``type``; the rest of the property schema (``items``,
``enum``, bounds…) becomes its ``json_schema`` fragment. Properties that do not
have exactly one type are represented as follows, each with a warning:

* ``["X", "null"]`` or ``anyOf``/``oneOf`` of ``X`` and ``null`` (the usual
  ``Optional[X]``): type ``X``; a ``null`` default is dropped (leaving the value
  out means the same for an optional parameter);
* ``integer`` and ``number`` together: ``number``;
* several other types: the first one listed (its alternative schemas are
  dropped), so ToolHub validates the common case and says what it narrowed;
* no type at all: inferred from ``enum``/``const`` values, ``properties``
  (object) or ``items`` (array), else ``string``.

Local ``$ref``s (``#/...``) are inlined first; a cycle or a remote reference
becomes ``{}`` (any value) with a warning. A fragment that is not valid JSON
Schema 2020-12 (e.g. draft-04 boolean ``exclusiveMinimum``) is dropped with a
warning, and so is a default that does not match the parameter's schema.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any
from urllib.parse import unquote

from registry import schema as schema_mod

SIMPLE_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
PARAM_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_OWNED = {"type", "description", "default"}
_MAX_REF_DEPTH = 32


class SchemaProblem(Exception):
    """A schema that cannot become parameter rows; ``path`` points into the schema."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.message = message
        self.path = path


def canonical(value: Any) -> str:
    """A JSON text that tells ``1``, ``1.0`` and ``true`` apart (Python's ``==`` does not)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# --------------------------------------------------------------------------- $ref


def json_pointer_get(root: Any, ref: str) -> Any:
    target = root
    for raw in ref[2:].split("/") if ref != "#" else []:
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdecimal() and int(token) < len(target):
            target = target[int(token)]
        else:
            raise KeyError(ref)
    return target


def resolve_refs(node: Any, root: Any, warnings: list[str], *, where: str = "") -> Any:
    """A copy of ``node`` with local ``$ref``s (``#/…``) inlined against ``root``."""

    def walk(value: Any, stack: tuple[str, ...], path: str) -> Any:
        if isinstance(value, list):
            return [walk(v, stack, f"{path}/{i}") for i, v in enumerate(value)]
        if not isinstance(value, dict):
            return value
        ref = value.get("$ref")
        if isinstance(ref, str):
            siblings = {k: v for k, v in value.items() if k != "$ref"}
            if not ref.startswith("#"):
                warnings.append(f"{path or '/'}: remote $ref {ref!r} not followed (any value)")
                return walk(siblings, stack, path)
            if ref in stack or len(stack) >= _MAX_REF_DEPTH:
                warnings.append(f"{path or '/'}: recursive $ref {ref!r} left open (any value)")
                return walk(siblings, stack, path)
            try:
                target = json_pointer_get(root, ref)
            except KeyError:
                raise SchemaProblem(f"$ref {ref!r} points nowhere", path or "/") from None
            resolved = walk(copy.deepcopy(target), (*stack, ref), path)
            if isinstance(resolved, dict):
                return {**resolved, **walk(siblings, stack, path)}
            return resolved
        return {
            k: walk(v, stack, f"{path}/{k}")
            for k, v in value.items()
            if k not in ("$defs", "definitions")
        }

    return walk(node, (), where)


# --------------------------------------------------------------------------- one property


def _kind_of_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _pick(kinds: list[str], label: str, warnings: list[str]) -> str:
    non_null = [k for k in dict.fromkeys(kinds) if k != "null"]
    if not non_null:
        return "null"
    if len(non_null) == 1:
        return non_null[0]
    if set(non_null) == {"integer", "number"}:
        return "number"
    warnings.append(f"{label}: types {non_null} narrowed to {non_null[0]!r}")
    return non_null[0]


def _combined_type(prop: dict, label: str, warnings: list[str]) -> tuple[str, dict] | None:
    """The type an ``anyOf`` / ``oneOf`` (or a one-member ``allOf``) narrows to; None
    when ``prop`` has no such combiner to go by."""
    for combiner in ("anyOf", "oneOf", "allOf"):
        members = prop.get(combiner)
        if not isinstance(members, list) or not members:
            continue
        rest = {k: v for k, v in prop.items() if k != combiner}
        useful = [m for m in members if isinstance(m, dict) and m.get("type") != "null"]
        if combiner == "allOf" and len(members) == 1 and useful:
            return _single_type({**useful[0], **rest}, label, warnings)
        if combiner == "allOf":
            return None
        if len(useful) == 1:
            return _single_type({**useful[0], **rest}, label, warnings)
        kinds = [m.get("type") for m in useful]
        if kinds and all(k in ("integer", "number") for k in kinds):
            return "number", rest
        if useful:
            first = useful[0]
            first_kind = first.get("type") if isinstance(first.get("type"), str) else None
            warnings.append(
                f"{label}: {combiner} of {len(useful)} schemas narrowed to the first"
                + (f" ({first_kind})" if first_kind else "")
            )
            return _single_type({**first, **rest}, label, warnings)
    return None


def _single_type(prop: dict, label: str, warnings: list[str]) -> tuple[str, dict]:
    """The one JSON type for ``prop`` and the property schema to keep (see the module doc)."""
    kind = prop.get("type")
    if isinstance(kind, str):
        if kind not in SIMPLE_TYPES:
            raise SchemaProblem(f"unknown JSON type {kind!r}")
        return kind, prop
    if isinstance(kind, list):
        if not kind or not all(isinstance(k, str) and k in SIMPLE_TYPES for k in kind):
            raise SchemaProblem(f"'type' must name JSON types, got {kind!r}")
        return _pick(kind, label, warnings), prop
    if kind is not None:
        raise SchemaProblem(f"'type' must be a string or a list, got {kind!r}")
    combined = _combined_type(prop, label, warnings)
    if combined is not None:
        return combined
    for key in ("enum", "const"):
        if key in prop:
            values = prop[key] if key == "enum" else [prop[key]]
            if isinstance(values, list) and values:
                return _pick([_kind_of_value(v) for v in values], label, warnings), prop
    if isinstance(prop.get("properties"), dict):
        return "object", prop
    if "items" in prop or "prefixItems" in prop:
        return "array", prop
    warnings.append(f"{label}: no type given; registered as 'string'")
    return "string", prop


def property_to_row(
    name: str,
    prop: Any,
    *,
    required: bool,
    position: int,
    warnings: list[str],
    label: str | None = None,
) -> dict[str, Any]:
    """One parameter row (service fields) for property ``name`` with schema ``prop``."""
    label = label or name
    if not isinstance(name, str) or not PARAM_NAME_RE.fullmatch(name):
        raise SchemaProblem(
            f"parameter name {name!r} is not allowed: start with a letter or '_', then letters, "
            "digits, '_', '.' or '-' (at most 64)"
        )
    if prop is True:
        prop = {}
    if not isinstance(prop, dict):
        raise SchemaProblem("a property schema must be an object")
    description = prop.get("description", "")
    if not isinstance(description, str):
        raise SchemaProblem("'description' must be a string")
    has_default = "default" in prop
    default = prop.get("default")
    kind, kept = _single_type(prop, label, warnings)
    fragment = {k: v for k, v in kept.items() if k not in _OWNED}
    problems = schema_mod.fragment_errors(fragment)
    if problems:
        warnings.append(f"{label}: schema details dropped ({problems[0]})")
        fragment = {}
    row: dict[str, Any] = {
        "name": name,
        "type": kind,
        "required": bool(required),
        "description": description,
        "json_schema": fragment,
        "position": position,
    }
    if has_default:
        if schema_mod.default_errors(kind, fragment, default):
            if default is not None:
                warnings.append(f"{label}: default {default!r} does not match; dropped")
        else:
            row["default"] = default
    return row


# --------------------------------------------------------------------------- whole schemas


def schema_to_rows(
    schema: Any, *, parameter_type: str = "input", warnings: list[str], resolve: bool = True
) -> list[dict[str, Any]]:
    """Rows for the top-level properties of an object schema (``$ref``s resolved first)."""
    if schema is None:
        return []
    if not isinstance(schema, dict):
        raise SchemaProblem("must be a JSON Schema object")
    if resolve:
        schema = resolve_refs(schema, schema, warnings)
    kind = schema.get("type", "object")
    if kind != "object":
        raise SchemaProblem(f"must describe an object (type: object), not {kind!r}", "/type")
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        raise SchemaProblem("'properties' must be an object", "/properties")
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise SchemaProblem("'required' must be a list of property names", "/required")
    missing = [r for r in required if r not in properties]
    if missing:
        warnings.append(f"required names without a property ignored: {missing}")
    rows = []
    for position, (name, prop) in enumerate(properties.items()):
        try:
            row = property_to_row(
                name, prop, required=name in required, position=position, warnings=warnings
            )
        except SchemaProblem as exc:
            raise SchemaProblem(exc.message, f"/properties/{name}{exc.path}") from None
        row["parameter_type"] = parameter_type
        rows.append(row)
    return rows


def rows_to_schema(parameters) -> dict[str, Any]:
    """The object schema of ``ToolParameter`` rows (ordered by position, then name)."""
    ordered = sorted(parameters, key=lambda p: (p.position, p.name))
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    required = []
    for param in ordered:
        # The same schema as the tool's (``registry.schema``), its own keys first for people.
        prop: dict[str, Any] = {"type": param.type}
        if param.description:
            prop["description"] = param.description
        if param.has_default:
            prop["default"] = param.default
        prop.update({k: v for k, v in (param.json_schema or {}).items() if k not in _OWNED})
        schema["properties"][param.name] = prop
        if param.required:
            required.append(param.name)
    if required:
        schema["required"] = required
    return schema
