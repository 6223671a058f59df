"""When a write moves the tool definition callers cache, and telling them."""

from __future__ import annotations

from django.utils import timezone

from registry.definitions import definition_hash, registry_definition
from registry.models import Tool
from registry.models.tools import DefinitionSource
from registry.policy import MCP_LINK_METADATA


def _definition_changed(tool_id) -> None:
    """A parameter or config of the tool was added, changed or removed: the tool's
    ``definition_changed_at`` says so (a call approved against it as it was, and
    results cached under it, must see that; a deletion leaves nothing else behind).
    """
    now = timezone.now()
    Tool.objects.filter(pk=tool_id).update(updated_at=now, definition_changed_at=now)
    _approved_definition_follows(tool_id)


def _approved_definition_follows(tool_id, tool: Tool | None = None) -> None:
    """Record the registry's definition of the tool as approved, after a write through
    these services (made by someone allowed to make it, and audited). Not for a tool
    whose approved definition is its MCP server's: a sync or an admin's approval of a
    diff moves that one (``registry.services.pinning``)."""
    row = (
        Tool.objects.filter(pk=tool_id)
        .exclude(approved_definition_source=DefinitionSource.MCP_SERVER)
        .prefetch_related("parameters")
        .first()
    )
    if row is None:
        return
    definition = registry_definition(row)
    digest = definition_hash(definition)
    fields = {
        "approved_definition": definition,
        "approved_definition_hash": digest,
        "approved_definition_source": DefinitionSource.REGISTRY,
    }
    if digest != row.approved_definition_hash or not row.approved_definition_source:
        Tool.objects.filter(pk=tool_id).update(**fields)
    if tool is not None:  # the caller's copy says what the row says (a later save keeps it)
        for name, value in fields.items():
            setattr(tool, name, value)


# What a call of the tool does depends on these fields (and on the MCP link in its
# metadata); its description and other metadata do not change it. The name does:
# a Python tool without a function config calls what its name says (an MCP tool
# calls its stored remote_tool_name).
DEFINITION_FIELDS = (
    "name",
    "type",
    "version",
    "timeout_seconds",
    "max_retries",
    "max_response_bytes",
    "requires_approval",
    "approval_condition",
    "approval_ttl_seconds",
)
# What a parameter means to a call (not its description or position).
PARAMETER_DEFINITION_FIELDS = (
    "name",
    "parameter_type",
    "type",
    "required",
    "default",
    "has_default",
    "json_schema",
)


def _mcp_link_moved(before: dict, after: dict) -> bool:
    """Whether an update made a tool an ``mcp`` tool or moved its link in the metadata."""
    if after.get("type") != "mcp":
        return False
    old, new = before.get("tool_metadata") or {}, after.get("tool_metadata") or {}
    return before.get("type") != "mcp" or old.get("mcp_server_id") != new.get("mcp_server_id")


def _definition_moved(before: dict, after: dict) -> bool:
    if any(before.get(f) != after.get(f) for f in DEFINITION_FIELDS):
        return True
    old, new = before.get("tool_metadata") or {}, after.get("tool_metadata") or {}
    return any(old.get(k) != new.get(k) for k in MCP_LINK_METADATA)
