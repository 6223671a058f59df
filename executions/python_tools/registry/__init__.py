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

The package, one concept a module: ``errors``, ``docstrings``, ``hints`` (type hints
as JSON Schema), ``tools`` (a function described as a tool) and ``store`` (the
process-wide registry and ``@tool``).
"""

from __future__ import annotations

from executions.python_tools.registry.docstrings import parse_docstring
from executions.python_tools.registry.errors import ToolDefinitionError
from executions.python_tools.registry.hints import schema_for_hint
from executions.python_tools.registry.store import ToolRegistry, registry, tool
from executions.python_tools.registry.tools import (
    JSON_SCHEMA_DIALECT,
    TOOL_NAME_RE,
    ParameterSpec,
    RegisteredTool,
    build_tool,
)

__all__ = [
    "JSON_SCHEMA_DIALECT",
    "TOOL_NAME_RE",
    "ParameterSpec",
    "RegisteredTool",
    "ToolDefinitionError",
    "ToolRegistry",
    "build_tool",
    "parse_docstring",
    "registry",
    "schema_for_hint",
    "tool",
]
