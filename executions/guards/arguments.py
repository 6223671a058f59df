"""Argument rules: refuse arguments that match a condition, or that are too large.

``condition`` is a JSON Schema in the language of a tool's approval
condition: the rule matches when the arguments are valid against it (e.g.
``{"properties": {"path": {"pattern": "^/etc/"}}, "required": ["path"]}``).
``max_bytes`` bounds the arguments' canonical JSON, ``max_string_length`` any
one string, ``max_items`` any one list or object. What a violation records is
the rule and where, never the value. The condition's patterns run under the
input schema's time limit; one that cannot be checked in time denies the call.
The condition matches the arguments as given or any of their readings
(``executions.validation.normalise``: entities, look-alike letters, SQL comments,
``/etc/./passwd``, ``rm -fr`` for ``rm -rf``).
"""

from __future__ import annotations

from typing import Any

from executions.guards.findings import json_path
from executions.guards.types import Violation
from executions.validation.patterns import condition_matches
from registry.canonical import canonical_json


def _too_long(arguments: Any, limit: int | None, items: int | None) -> Violation | None:
    stack: list[tuple[tuple, Any]] = [((), arguments)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str) and limit is not None and len(value) > limit:
            return Violation(
                f"The argument at {json_path(path)} is longer than {limit} characters.",
                {"rule": "max_string_length", "path": json_path(path), "limit": limit},
            )
        if isinstance(value, dict | list):
            if items is not None and len(value) > items:
                return Violation(
                    f"The argument at {json_path(path)} has more than {items} items.",
                    {"rule": "max_items", "path": json_path(path), "limit": items},
                )
            entries = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend(((*path, key), child) for key, child in entries)
    return None


def check_arguments(arguments: dict, config: dict) -> Violation | None:
    """The first rule ``arguments`` break, or None."""
    condition = config.get("condition")
    # A pattern that cannot be checked in time raises: the guard fails closed (denies).
    if condition and condition_matches(condition, arguments):
        return Violation(
            config.get("message") or "These arguments are not allowed for this tool.",
            {"rule": "condition"},
        )
    max_bytes = config.get("max_bytes")
    if max_bytes is not None:
        size = len(canonical_json(arguments).encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            return Violation(
                f"The arguments are {size} bytes as JSON; this tool takes at most {max_bytes}.",
                {"rule": "max_bytes", "limit": max_bytes, "size": size},
            )
    violation = _too_long(arguments, config.get("max_string_length"), config.get("max_items"))
    if violation is not None and config.get("message"):
        return Violation(f"{config['message']} ({violation.message})", violation.details)
    return violation
