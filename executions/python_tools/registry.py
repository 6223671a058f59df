"""Registering Python functions as tools: ``@tool`` and the process-wide registry.

Only functions registered here can run through the Python executor; nothing
imports a module path that came from the database.

The input JSON Schema (draft 2020-12) is derived from the signature and the
docstring:

- ``str`` / ``int`` / ``float`` / ``bool`` -> ``string`` / ``integer`` / ``number`` / ``boolean``;
  ``Any`` (or no annotation) -> any value (top-level parameters then need a type).
- ``list[X]`` (also ``tuple[X, ...]``, ``set[X]``, ``Sequence[X]``) -> ``array`` with ``items``;
  ``dict[str, X]`` / ``Mapping[str, X]`` -> ``object`` with ``additionalProperties``.
- ``X | None`` / ``Optional[X]`` -> ``X`` plus ``null`` (``"nullable": True`` in ``parameters()``).
- ``Literal[...]`` -> ``enum``; an ``Enum`` subclass -> ``enum`` of its values (the
  executor passes the member, not the raw value); ``Annotated[X, "text"]`` -> ``X``
  described by ``text`` when the docstring says nothing.
- a default -> ``"default"`` and not required.
- the docstring's first paragraph is the tool's description; a Google-style
  ``Args:`` section gives per-parameter descriptions.

A top-level parameter must have ONE JSON type (besides ``null``), because a
tool parameter row has one type: ``int | str`` or ``Literal[1, "a"]`` is refused
at registration (``int | float`` becomes ``number``). Nested types may mix.
"""

from __future__ import annotations

import enum
import inspect
import re
import threading
import types
import typing
from collections.abc import Callable, Iterator, Mapping, MutableMapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Any

from executions.jsonsafe import json_safe

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARRAY_ORIGINS = {list, set, frozenset, Sequence, MutableSequence}
_OBJECT_ORIGINS = {dict, Mapping, MutableMapping}
_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_ARG_LINE = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_OWNED_KEYS = ("type", "description", "default")  # what a parameter row stores itself


class ToolDefinitionError(TypeError):
    """A function cannot be registered as a tool (unsupported hint, bad name…)."""


# --------------------------------------------------------------------------- docstrings


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return (first paragraph, {parameter: description}) from a Google-style docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER.match(line.strip()):
            break
        summary.append(line.strip())
    descriptions: dict[str, str] = {}
    in_args = False
    header_indent = 0
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not in_args:
            if _ARGS_HEADER.match(stripped):
                in_args, header_indent, entry_indent, current = True, indent, None, None
            continue
        if not stripped:
            continue
        if indent <= header_indent:  # the next section ("Returns:", "Raises:") or prose
            in_args = False
            if _ARGS_HEADER.match(stripped):
                in_args, header_indent, entry_indent, current = True, indent, None, None
            continue
        if entry_indent is None:
            entry_indent = indent
        match = _ARG_LINE.match(stripped)
        if indent <= entry_indent and match:
            current = match.group(1)
            descriptions[current] = match.group(3).strip()
        elif current is not None:  # a continuation line
            descriptions[current] = f"{descriptions[current]} {stripped}".strip()
    return " ".join(summary), descriptions


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
        members = [a for a in args if a is not type(None)]
        has_null = len(members) < len(args)
        if set(members) == {int, float}:
            inner: dict[str, Any] = {"type": "number"}
        elif len(members) == 1:
            inner = schema_for_hint(members[0])
        else:
            inner = {"anyOf": [schema_for_hint(m) for m in members]}
        return _nullable(inner) if has_null else inner
    if hint in (list, set, frozenset, tuple) or origin in _ARRAY_ORIGINS:
        schema: dict[str, Any] = {"type": "array"}
        items = schema_for_hint(args[0]) if args else {}
        if items:
            schema["items"] = items
        if hint in (set, frozenset) or origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is tuple:
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
    if hint is dict or origin in _OBJECT_ORIGINS:
        schema = {"type": "object"}
        if args:
            key, value = args
            key, _ = _strip_annotated(key)
            if key not in (str, Any):
                raise ToolDefinitionError(f"dict keys must be str (JSON object keys), not {key!r}")
            value_schema = schema_for_hint(value)
            if value_schema:
                schema["additionalProperties"] = value_schema
        return schema
    raise ToolDefinitionError(f"unsupported type hint {hint!r}")


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


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class ParameterSpec:
    name: str
    schema: dict[str, Any]  # the full property schema (with description/default)
    required: bool
    description: str
    has_default: bool
    default: Any
    enum_class: type[enum.Enum] | None = None


@dataclass(frozen=True)
class RegisteredTool:
    """One registered Python tool."""

    name: str
    description: str
    input_schema: dict[str, Any]
    function: Callable[..., Any]
    is_async: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    specs: tuple[ParameterSpec, ...] = ()

    @property
    def version(self) -> str:
        return self.metadata.get("version", "")

    @property
    def category(self) -> str | None:
        return self.metadata.get("category")

    def parameters(self) -> list[dict[str, Any]]:
        """Input parameters shaped for the tool registry's parameter rows.

        ``type`` is the single JSON type; ``json_schema`` holds the rest
        (``items``, ``enum``…) without ``type``/``description``/``default``.
        ``nullable`` is set when the hint also allows ``None`` (a parameter row
        cannot say so with its one type).
        """
        out: list[dict[str, Any]] = []
        for spec in self.specs:
            schema = spec.schema
            kind = schema.get("type")
            nullable = False
            if isinstance(kind, list):
                nullable = "null" in kind
                kind = next(k for k in kind if k != "null")
            fragment = {k: v for k, v in schema.items() if k not in _OWNED_KEYS}
            if nullable and "enum" in fragment:
                fragment["enum"] = [v for v in fragment["enum"] if v is not None]
            entry: dict[str, Any] = {
                "name": spec.name,
                "type": kind,
                "required": spec.required,
                "description": spec.description,
            }
            if spec.has_default:
                entry["default"] = spec.default
            entry["json_schema"] = fragment
            if nullable:
                entry["nullable"] = True
            out.append(entry)
        return out


def _top_level_type(name: str, schema: dict[str, Any]) -> None:
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null":
        return
    if isinstance(kind, list) and len([k for k in kind if k != "null"]) == 1:
        return
    raise ToolDefinitionError(
        f"parameter {name!r} must have a single JSON type (got {schema or 'any value'}); "
        "use one type, optionally with None"
    )


def build_tool(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> RegisteredTool:
    """Derive a :class:`RegisteredTool` from ``function`` (without registering it)."""
    if not callable(function):
        raise ToolDefinitionError(f"{function!r} is not callable")
    tool_name = name if name is not None else getattr(function, "__name__", "")
    if not isinstance(tool_name, str) or not TOOL_NAME_RE.match(tool_name):
        raise ToolDefinitionError(
            f"tool name {tool_name!r} must match {TOOL_NAME_RE.pattern} (letters, digits, _ and -)"
        )
    if inspect.isasyncgenfunction(function) or inspect.isgeneratorfunction(function):
        raise ToolDefinitionError(f"{tool_name}: generator functions cannot be tools")
    summary, arg_docs = parse_docstring(inspect.getdoc(function))
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(f"{tool_name}: cannot resolve type hints: {exc}") from exc
    specs: list[ParameterSpec] = []
    for param in inspect.signature(function).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ToolDefinitionError(
                f"{tool_name}: parameter {param.name!r} must be an ordinary named parameter "
                "(no *args, **kwargs or positional-only)"
            )
        hint = hints.get(param.name, param.annotation)
        _, annotated_doc = _strip_annotated(hint)
        try:
            schema = dict(schema_for_hint(hint))
        except ToolDefinitionError as exc:
            raise ToolDefinitionError(f"{tool_name}: parameter {param.name!r}: {exc}") from None
        _top_level_type(param.name, schema)
        text = arg_docs.get(param.name) or annotated_doc
        if text:
            schema["description"] = text
        has_default = param.default is not param.empty
        default = json_safe(param.default) if has_default else None
        if has_default:
            schema["default"] = default
        specs.append(
            ParameterSpec(
                name=param.name,
                schema=schema,
                required=not has_default,
                description=text,
                has_default=has_default,
                default=default,
                enum_class=_enum_class(hint),
            )
        )
    input_schema: dict[str, Any] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": {spec.name: spec.schema for spec in specs},
        "additionalProperties": False,
    }
    required = [spec.name for spec in specs if spec.required]
    if required:
        input_schema["required"] = required
    return RegisteredTool(
        name=tool_name,
        description=(description if description is not None else summary).strip(),
        input_schema=input_schema,
        function=function,
        is_async=inspect.iscoroutinefunction(function),
        metadata=dict(metadata or {}),
        specs=tuple(specs),
    )


class ToolRegistry:
    """Registered Python tools by name (thread-safe)."""

    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._lock = threading.Lock()

    def register(self, entry: RegisteredTool) -> RegisteredTool:
        with self._lock:
            existing = self._tools.get(entry.name)
            if existing is not None and _origin(existing.function) != _origin(entry.function):
                raise ToolDefinitionError(
                    f"a Python tool named {entry.name!r} is already registered "
                    f"({_origin(existing.function)})"
                )
            self._tools[entry.name] = entry  # same function re-imported/reloaded: replace
        return entry

    def tool(
        self,
        function: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        category: str | None = None,
        version: str = "1.0.0",
        **metadata: Any,
    ) -> Any:
        """Decorator registering a function; usable bare (``@tool``) or called (``@tool(...)``)."""
        meta: dict[str, Any] = {"version": version}
        if category is not None:
            meta["category"] = category
        meta.update(metadata)

        def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
            entry = build_tool(func, name=name, description=description, metadata=meta)
            self.register(entry)
            try:
                func.__toolhub_tool__ = entry  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
            return func

        if function is not None:
            return decorate(function)
        return decorate

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def unregister(self, name: str) -> RegisteredTool | None:
        with self._lock:
            return self._tools.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def all(self) -> list[RegisteredTool]:
        return [self._tools[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter(self.all())

    def __len__(self) -> int:
        return len(self._tools)


def _origin(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", "?")
    qualname = getattr(function, "__qualname__", repr(function))
    return f"{module}.{qualname}"


registry = ToolRegistry()
tool = registry.tool
