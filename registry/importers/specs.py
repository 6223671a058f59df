"""What an import file asks for, checked and normalized, before anything is written."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from registry.importers.source import Document, Problem

MISSING: Any = object()
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
CONFIG_KEY_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


@dataclass
class ToolSpec:
    """One tool to upsert (arguments of ``registry.services.catalog.tool_upsert``)."""

    path: str
    document: Document
    name: str
    type: str | None = None
    default_type: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] | None = None
    parameters: list[dict] | None = None
    output_parameters: list[dict] | None = None
    configs: dict[str, Any] | None = None
    secret_configs: dict[str, Any] | None = None
    mcp_server: str | None = None
    remote_tool_name: str | None = None
    # OpenAPI: the operation ("GET /users/{id}") that identifies the tool within its namespace.
    operation: str | None = None


@dataclass
class ServerSpec:
    """One MCP server to upsert."""

    path: str
    document: Document
    name: str
    fields: dict[str, Any] = field(default_factory=dict)
    auth_token: Any = MISSING  # MISSING: leave the stored token; None: clear it
    needs_token: bool = False  # ``auth: {type: bearer}`` with neither token nor token_env_var


class Entry:
    """Typed access to one mapping of the input; problems name the path and line."""

    def __init__(
        self,
        doc: Document,
        path: str,
        data: Any,
        errors: list[Problem],
        unknown: list[Problem],
    ):
        self.doc = doc
        self.path = path
        self.data = data if isinstance(data, dict) else {}
        self.errors = errors
        self.unknown = unknown
        if not isinstance(data, dict):
            self.error("", f"must be a mapping (key: value), got {kind_of(data)}")

    def has(self, key: str) -> bool:
        return key in self.data

    def key_path(self, key: str) -> str:
        return f"{self.path}/{key}" if key else self.path

    def error(self, key: str, message: str) -> None:
        self.errors.append(self.doc.problem(self.key_path(key), message))

    def _get(self, key: str, required: bool) -> Any:
        if key not in self.data:
            if required:
                self.error("", f"'{key}' is required")
            return MISSING
        return self.data[key]

    def string(self, key: str, *, required=False, nullable=False, max_length=None) -> Any:
        value = self._get(key, required)
        if value is MISSING or (value is None and nullable):
            return value
        if not isinstance(value, str):
            hint = " (quote it)" if isinstance(value, int | float) else ""
            self.error(key, f"must be a string, got {kind_of(value)}{hint}")
            return MISSING
        if max_length and len(value) > max_length:
            self.error(key, f"must be at most {max_length} characters")
            return MISSING
        return value

    def boolean(self, key: str, *, required=False) -> Any:
        value = self._get(key, required)
        if value is MISSING:
            return value
        if not isinstance(value, bool):
            self.error(key, f"must be true or false, got {kind_of(value)}")
            return MISSING
        return value

    def integer(self, key: str, *, minimum=None, maximum=None, nullable=False) -> Any:
        value = self._get(key, False)
        if value is MISSING or (value is None and nullable):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(key, f"must be an integer, got {kind_of(value)}")
            return MISSING
        if minimum is not None and value < minimum:
            self.error(key, f"must be at least {minimum}")
            return MISSING
        if maximum is not None and value > maximum:
            self.error(key, f"must be at most {maximum}")
            return MISSING
        return value

    def string_list(self, key: str) -> Any:
        value = self._get(key, False)
        if value is MISSING:
            return value
        if not isinstance(value, list):
            self.error(key, f"must be a list of strings, got {kind_of(value)}")
            return MISSING
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.error(f"{key}/{index}", f"must be a string, got {kind_of(item)}")
                return MISSING
        return value

    def mapping(self, key: str) -> Any:
        value = self._get(key, False)
        if value is MISSING:
            return value
        if not isinstance(value, dict):
            self.error(key, f"must be a mapping, got {kind_of(value)}")
            return MISSING
        return value

    def any(self, key: str) -> Any:
        return self._get(key, False)

    def report_unknown(self, known: set[str], where: str = "") -> None:
        for key in self.data:
            if key not in known:
                self.unknown.append(
                    self.doc.problem(
                        self.key_path(key),
                        f"unknown key '{key}'{where} (ignored)",
                        code="unknown_key",
                    )
                )


def kind_of(value: Any) -> str:
    """The JSON name of ``value``'s type, for messages that say what was found."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
