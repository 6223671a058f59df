"""Concurrency slots: a tool's ``max_concurrency`` and its MCP server's, held in the
shared store for as long as a call may run (a lease frees a slot a dead process held)."""

from __future__ import annotations

import logging

from executions.services.shared_state import SharedStateUnavailable, slot_acquire, slot_release
from registry.models import Tool
from registry.services.mcp import mcp_server_for_tool

logger = logging.getLogger(__name__)


def _slot_keys(tool: Tool) -> list[tuple[str, int]]:
    """The concurrency limits that apply: the tool's, and its MCP server's."""
    keys = []
    if tool.max_concurrency:
        keys.append((f"toolhub:slots:tool:{tool.pk}", tool.max_concurrency))
    if tool.type == "mcp":
        server = mcp_server_for_tool(tool)
        if server is not None and server.max_concurrency:
            keys.append((f"toolhub:slots:mcp:{server.pk}", server.max_concurrency))
    return keys


def acquire_slots(holder: str, tool: Tool, lease: float) -> list[str] | None:
    """Take every slot a call of ``tool`` needs for ``holder``, or none (returns None
    when one is full)."""
    taken: list[str] = []
    for key, limit in _slot_keys(tool):
        try:
            ok = slot_acquire(key, holder, limit, lease)
        except SharedStateUnavailable as exc:
            if tool.is_high_risk:
                ok = False
            else:
                logger.warning(
                    "concurrency store unavailable (%s); running %s unguarded", exc, tool.name
                )
                ok = True
        if not ok:
            for held in taken:
                release(held, holder)
            return None
        taken.append(key)
    return taken


def release(key: str, holder: str) -> None:
    try:
        slot_release(key, holder)
    except SharedStateUnavailable as exc:
        logger.warning("could not release slot %s (its lease frees it): %s", key, exc)
