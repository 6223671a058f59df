"""Pinned definitions at call time: what the MCP executor checks, and what follows a mismatch.

The executor lists the server's tools before the call and refuses it when the
tool's definition there is not the approved one (``ErrorType.DEFINITION_CHANGED``);
it writes nothing. The runner then quarantines the tool here, with the
definition the server showed kept for an admin to review
(``registry.services.pinning``).
"""

from __future__ import annotations

import logging

from executions.executors.base import ErrorType, ExecutorResult
from registry.models import Tool
from registry.models.tools import DefinitionSource, ToolType
from registry.services import pinning

logger = logging.getLogger(__name__)

DEFINITION_CHANGED = ErrorType.DEFINITION_CHANGED


def pinned_hash(tool: Tool) -> str:
    """The hash the executor checks the server's listing against (empty: nothing pinned)."""
    if tool.type == ToolType.MCP and tool.approved_definition_source == DefinitionSource.MCP_SERVER:
        return tool.approved_definition_hash
    return ""


def quarantine_on_mismatch(tool: Tool, result: ExecutorResult) -> None:
    """Quarantine ``tool`` when its call was refused for a changed definition."""
    if result.ok or result.error_type != DEFINITION_CHANGED:
        return
    seen = (result.metadata or {}).get("seen_definition")
    if not isinstance(seen, dict):
        return  # the server no longer lists the tool: the next sync deactivates it
    held = pinning.tool_definition_hold(actor=None, tool=tool, definition=seen, seen_in="call")
    if held:
        logger.warning("tool %s quarantined: its MCP server changed its definition", tool.name)
