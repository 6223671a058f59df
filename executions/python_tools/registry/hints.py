"""Type hints as JSON Schema (draft 2020-12)."""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any

from executions.jsonsafe import json_safe
from executions.python_tools.registry.errors import ToolDefinitionError

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARRAY_ORIGINS = {list, set, frozenset, Sequence, MutableSequence}
_OBJECT_ORIGINS = {dict, Mapping, MutableMapping}

# --------------------------------------------------------------------------- type hints


def _strip_annotated(hint: Any) -> tuple[Any, str]:
    if typing.get_origin(hint) is typing.Annotated:
        base, *extras = typing.get_args(hint)
        text = next((e for e in extras if isinstance(e, str)), "")
        return base, text
    return hint, ""


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _literal_type(values: Sequence[Any]) -> str | list[str] | None:
    kinds: list[str] = []
    for value in values:
        if value is None:
            kind = "null"
        elif isinstance(value, bool):
            kind = "boolean"
        elif isinstance(value, int):
            kind = "integer"
        elif isinstance(value, float):
            kind = "number"
        elif isinstance(value, str):
            kind = "string"
        else:
            raise ToolDefinitionError(f"unsupported Literal/Enum value {value!r}")
        if kind not in kinds:
            kinds.append(kind)
    if set(kinds) == {"integer", "number"}:
        return "number"
    if len(kinds) == 1:
        return kinds[0]
    return kinds or None


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    values = [json_safe(v) for v in values]
    schema: dict[str, Any] = {}
    kind = _literal_type(values)
    if kind is not None:
        schema["type"] = kind
    schema["enum"] = values
    return schema


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` also accepting ``null`` (type-specific keywords ignore a null instance)."""
    kind = schema.get("type")
    if isinstance(kind, str | list):
        kinds = [kind] if isinstance(kind, str) else list(kind)
        out = dict(schema, type=kinds if "null" in kinds else [*kinds, "null"])
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if not schema:
        return schema  # Any already allows null
    return {"anyOf": [schema, {"type": "null"}]}


def schema_for_hint(hint: Any) -> dict[str, Any]:
    """The JSON Schema of one type hint (raises ToolDefinitionError when unsupported)."""
    hint, _ = _strip_annotated(hint)
    if hint is Any or hint is inspect.Parameter.empty:
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([member.value for member in hint])
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        return _enum_schema(list(args))
    if _is_union(hint):
        return _union_schema(args)
    if hint in (list, set, frozenset, tuple) or origin in _ARRAY_ORIGINS:
        return _array_schema(hint, origin, args)
    if origin is tuple:
        return _tuple_schema(args)
    if hint is dict or origin in _OBJECT_ORIGINS:
        return _object_schema(args)
    raise ToolDefinitionError(f"unsupported type hint {hint!r}")


def _union_schema(args: tuple[Any, ...]) -> dict[str, Any]:
    members = [a for a in args if a is not type(None)]
    has_null = len(members) < len(args)
    if set(members) == {int, float}:
        inner: dict[str, Any] = {"type": "number"}
    elif len(members) == 1:
        inner = schema_for_hint(members[0])
    else:
        inner = {"anyOf": [schema_for_hint(m) for m in members]}
    return _nullable(inner) if has_null else inner


def _array_schema(hint: Any, origin: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """``list[X]``, ``set[X]``, ``Sequence[X]`` and the bare ``list``, ``set``, ``tuple``."""
    schema: dict[str, Any] = {"type": "array"}
    items = schema_for_hint(args[0]) if args else {}
    if items:
        schema["items"] = items
    if hint in (set, frozenset) or origin in (set, frozenset):
        schema["uniqueItems"] = True
    return schema


def _tuple_schema(args: tuple[Any, ...]) -> dict[str, Any]:
    """``tuple[X, ...]`` (any length), ``tuple[()]`` (empty) or ``tuple[X, Y]`` (fixed)."""
    if len(args) == 2 and args[1] is Ellipsis:
        items = schema_for_hint(args[0])
        return {"type": "array", "items": items} if items else {"type": "array"}
    if args == ((),):
        return {"type": "array", "maxItems": 0}
    return {
        "type": "array",
        "prefixItems": [schema_for_hint(a) for a in args],
        "items": False,
        "minItems": len(args),
    }


def _object_schema(args: tuple[Any, ...]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if args:
        key, value = args
        key, _ = _strip_annotated(key)
        if key not in (str, Any):
            raise ToolDefinitionError(f"dict keys must be str (JSON object keys), not {key!r}")
        value_schema = schema_for_hint(value)
        if value_schema:
            schema["additionalProperties"] = value_schema
    return schema


def _enum_class(hint: Any) -> type[enum.Enum] | None:
    """The Enum class behind ``E`` / ``E | None`` / ``Annotated[E, …]``, if any."""
    hint, _ = _strip_annotated(hint)
    if _is_union(hint):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = members[0] if len(members) == 1 else None
        hint, _ = _strip_annotated(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    return None
