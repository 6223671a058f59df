"""A function described as a tool: its parameters, input schema and metadata."""

from __future__ import annotations

import enum
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from executions.jsonsafe import json_safe
from executions.python_tools.registry.docstrings import parse_docstring
from executions.python_tools.registry.errors import ToolDefinitionError
from executions.python_tools.registry.hints import _enum_class, _strip_annotated, schema_for_hint

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_OWNED_KEYS = ("type", "description", "default")  # what a parameter row stores itself

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
    if not isinstance(tool_name, str) or not TOOL_NAME_RE.fullmatch(tool_name):
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
    specs = [
        _parameter_spec(tool_name, param, hints.get(param.name, param.annotation), arg_docs)
        for param in inspect.signature(function).parameters.values()
    ]
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


def _parameter_spec(
    tool_name: str, param: inspect.Parameter, hint: Any, arg_docs: Mapping[str, str]
) -> ParameterSpec:
    """One named parameter: its schema (one JSON type), description and default."""
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
        raise ToolDefinitionError(
            f"{tool_name}: parameter {param.name!r} must be an ordinary named parameter "
            "(no *args, **kwargs or positional-only)"
        )
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
    return ParameterSpec(
        name=param.name,
        schema=schema,
        required=not has_default,
        description=text,
        has_default=has_default,
        default=default,
        enum_class=_enum_class(hint),
    )
