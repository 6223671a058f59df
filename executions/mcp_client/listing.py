"""tools/list: every page of a server's tools."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import anyio

from executions.mcp_client.checks import _prepare
from executions.mcp_client.limits import _MAX_LIST_PAGES, _SYNC_GRACE_SECONDS, EgressCheck
from executions.mcp_client.runtime import _get_runtime
from executions.mcp_client.spec import MCPServerSpec
from executions.mcp_client.transports import _dispatch

# Sessions that have listed every page of their server's tools. The SDK checks a
# result's structured content against the tool's output schema only when the
# session knows that schema, and on its own it re-reads only the first page of a
# paginated listing: a tool on a later page went unchecked on a fresh session.
# By id: the SDK's Client is not hashable; the identity check covers a reused id.
_fully_listed: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


async def _all_tools(client: Any, budget: float) -> list[Any]:
    """Every page of ``tools/list`` (the session keeps each tool's output schema)."""
    tools: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(_MAX_LIST_PAGES):
        with anyio.fail_after(budget):
            page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    _fully_listed[id(client)] = client
    return tools


def listed_tool(tool: Any) -> dict[str, Any]:
    """One tool of a listing as a mapping: what the model reads about it."""
    annotations = tool.annotations
    return {
        "name": tool.name,
        "description": tool.description or "",
        "input_schema": tool.input_schema or {"type": "object"},
        "output_schema": tool.output_schema or None,
        "annotations": annotations.model_dump(exclude_none=True) if annotations else {},
    }


def list_tools(
    spec: MCPServerSpec | Mapping[str, Any],
    *,
    timeout: float | None = None,
    egress_check: EgressCheck | None = None,
) -> list[dict[str, Any]]:
    """``tools/list`` (all pages) as ``[{"name", "description", "input_schema",
    "output_schema", "annotations"}, …]``."""
    spec = _prepare(spec, egress_check)
    budget = float(timeout or spec.timeout_seconds)

    async def op(client: Any) -> list[dict[str, Any]]:
        return [listed_tool(tool) for tool in await _all_tools(client, budget)]

    runtime = _get_runtime()
    total = spec.timeout_seconds + budget * 2 + _SYNC_GRACE_SECONDS
    tools, _ = runtime.run(_dispatch(runtime, spec, op, idempotent=True), timeout=total)
    return tools
