"""Reads about pinned definitions: one tool's state, and a server's drift report."""

from __future__ import annotations

from typing import Any

from registry.definitions import definition_diff
from registry.models import MCPServer, Tool


def tool_definition_state(tool: Tool, *, with_definitions: bool = True) -> dict[str, Any]:
    """Whether the tool is quarantined, why, since when, and the pending diff."""
    state: dict[str, Any] = {
        "quarantined": tool.quarantined_at is not None,
        "quarantine_reason": tool.quarantine_reason or None,
        "quarantined_at": tool.quarantined_at,
        "approved_definition_hash": tool.approved_definition_hash,
        "approved_definition_source": tool.approved_definition_source or None,
        "pending_definition_hash": tool.pending_definition_hash or None,
        "rejected_definition_hash": tool.rejected_definition_hash or None,
        # Whose sync found the pending definition (None: beat, a call, or none pending).
        "pending_definition_seen_by": (
            tool.pending_definition_seen_by.get_username()
            if tool.pending_definition_seen_by is not None
            else None
        ),
        "diff": (
            definition_diff(tool.approved_definition, tool.pending_definition)
            if tool.pending_definition is not None
            else []
        ),
    }
    if with_definitions:
        state["approved_definition"] = tool.approved_definition or None
        state["pending_definition"] = tool.pending_definition
    return state


def mcp_server_drift(server: MCPServer) -> dict[str, Any]:
    """The server's tools whose definition drifted from the approved one (quarantined)."""
    from registry.services.mcp import mcp_server_tools  # a read; the module holds the lookup

    tools = mcp_server_tools(server).filter(quarantined_at__isnull=False).order_by("name")
    return {
        "server": server.name,
        "server_id": str(server.pk),
        "last_synced_at": server.last_synced_at,
        "last_sync_attempt_at": server.last_sync_attempt_at,
        "last_sync_error": server.last_sync_error,
        "sync_interval_minutes": server.sync_interval_minutes,
        "tool_count": mcp_server_tools(server).count(),
        "drifted": [
            {"tool_id": str(tool.pk), "name": tool.name, **tool_definition_state(tool)}
            for tool in tools
        ],
    }
