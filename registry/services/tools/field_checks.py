"""Checks on a tool's own fields: namespace, approval condition, metadata, finite numbers."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

from registry import schema as schema_mod
from registry.models import MCPServer, Tool
from registry.services.validation import raise_invalid
from toolhub.exceptions import Conflict, PermissionDenied


def _check_namespace(tool: Tool, name: str) -> None:
    """A server's listed prefix (``<server>__`` unless its operator chose another) belongs
    to the tools synced from that MCP server: a tool renamed into it would pass for one of
    them (and push the real one aside). A server listed without a prefix claims none."""
    own = str((tool.tool_metadata or {}).get("mcp_server_id") or "")
    for server in MCPServer.objects.only("pk", "name", "tool_prefix"):
        # Server names may hold underscores themselves (gh_, my__srv): test each prefix.
        prefix = server.listed_prefix
        if prefix and name.startswith(prefix) and own != str(server.pk):
            raise PermissionDenied(
                f"Names starting with '{prefix}' belong to the tools of MCP server "
                f"'{server.name}'; only platform admins give a tool such a name.",
                details=[{"field": "name", "message": "Platform admins only."}],
            )


def _check_approval_condition(tool: Tool) -> None:
    problems = schema_mod.fragment_errors(tool.approval_condition or {})
    if problems:
        raise_invalid(
            [{"field": "approval_condition", "message": problems[0], "code": "invalid_schema"}]
        )


# Execution.cost is DECIMAL(12, 6): a cost per call below one million, six decimals kept.
COST_PER_CALL_LIMIT = Decimal(10) ** 6


def _check_metadata(metadata: Any) -> None:
    if not isinstance(metadata, dict):
        raise_invalid(
            [{"field": "tool_metadata", "message": "Must be a JSON object.", "code": "invalid"}]
        )
    cost = metadata.get("cost_per_call")
    if cost is None:
        return
    try:
        if isinstance(cost, bool) or not isinstance(cost, int | float | str):
            raise InvalidOperation
        value = Decimal(str(cost).strip())
    except (InvalidOperation, ValueError):
        value = None
    if value is None or not value.is_finite() or not 0 <= value < COST_PER_CALL_LIMIT:
        raise_invalid(
            [
                {
                    "field": "tool_metadata.cost_per_call",
                    "message": "Must be a number (or a decimal string) from 0 to below "
                    f"{COST_PER_CALL_LIMIT:,}; got {str(cost)[:40]!r}.",
                    "code": "invalid",
                }
            ]
        )


def _unique_name_or_conflict(name: str, exclude_pk=None) -> None:
    qs = Tool.objects.filter(name=name)
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    if qs.exists():
        raise Conflict(
            f"A tool named '{name}' already exists.",
            code="duplicate_name",
            details=[{"field": "name", "message": "Already in use.", "code": "unique"}],
        )


def non_finite_path(value: Any, path: str = "") -> str | None:
    """Where ``value`` holds a number JSON cannot carry (NaN, Infinity); None when nowhere.

    The answer is ``path`` followed by the keys and indexes leading to the number.
    Walks nested lists and objects without recursion, so any depth is safe.
    """
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return where
        elif isinstance(item, Decimal):
            if not item.is_finite():
                return where
        elif isinstance(item, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
    return None


def non_finite_message(where: str) -> str:
    at = f" at {where}" if where else ""
    return (
        f"Holds a number JSON cannot carry{at}: NaN and Infinity are not JSON values "
        "(numbers must be finite; use null or a string instead)."
    )


def _check_finite(values: dict[str, Any], prefix: str = "") -> None:
    """Refuse NaN and Infinity in JSON values, naming the field (``prefix.field``) of each."""
    problems = []
    for field, value in values.items():
        where = non_finite_path(value, field)
        if where is not None:
            problems.append(
                {
                    "field": f"{prefix}.{field}" if prefix else field,
                    "message": non_finite_message(where),
                    "code": "not_finite",
                }
            )
    if problems:
        raise_invalid(problems)


def _check_tool_finite(tool: Tool) -> None:
    _check_finite(
        {"tool_metadata": tool.tool_metadata, "approval_condition": tool.approval_condition}
    )
