"""Pinned tool definitions: quarantine on a changed definition, and an admin's decision.

A tool's approved definition (``Tool.approved_definition``, ``registry.definitions``)
is recorded when it is created, imported or synced. When an MCP server later
shows another definition for it (a sync, or the listing a call reads first), the
new one is kept beside the approved one (``pending_definition``) and the tool is
quarantined: admission refuses its calls with ``tool_definition_changed``. A
platform admin reads the diff and approves it (the new definition becomes the
approved one and reaches the tool's description and parameters) or rejects it
(the approved one stays; the tool stays quarantined while its server serves the
rejected definition, and a sync that sees the approved one again lifts it).

Four eyes: for a tool that requires human approval, the admin who approves a
diff may be neither the person whose sync found it nor the last person who
changed the settings of the tool's MCP server (who could have pointed it at a
server of their choosing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from registry.definitions import definition_diff, definition_hash
from registry.models import AuditEvent, MCPServer, Tool
from registry.models.tools import DefinitionSource, QuarantineReason
from registry.policy import POLICY, policy_check
from registry.services.audit import audit_record
from toolhub.exceptions import Conflict, PermissionDenied

# Audit actions of this module.
CHANGED = "tool.definition_changed"
APPROVED = "tool.definition_approved"
REJECTED = "tool.definition_rejected"
RESTORED = "tool.definition_restored"
DIFF_LINES_AUDITED = 200


def _set(tool: Tool, **fields: Any) -> None:
    Tool.objects.filter(pk=tool.pk).update(**fields)
    for name, value in fields.items():
        setattr(tool, name, value)


def _locked(tool: Tool) -> Tool:
    return Tool.objects.select_for_update().get(pk=tool.pk)


def _state(tool: Tool) -> dict[str, Any]:
    return {
        "approved_definition_hash": tool.approved_definition_hash,
        "pending_definition_hash": tool.pending_definition_hash,
        "quarantined": tool.quarantined_at is not None,
        "quarantine_reason": tool.quarantine_reason,
    }


def tool_definition_pin(*, tool: Tool, definition: dict[str, Any]) -> None:
    """Record ``definition`` (its MCP server's) as the tool's approved one; no quarantine.

    For the first sync of a server (its registration is the admins' review) and the
    first time a server's definition of a tool registered by hand is seen, when it
    says what the registry said. The sync's own audit event records it.
    """
    _set(
        tool,
        approved_definition=definition,
        approved_definition_hash=definition_hash(definition),
        approved_definition_source=DefinitionSource.MCP_SERVER,
        pending_definition=None,
        pending_definition_hash="",
        pending_definition_seen_by=None,
        rejected_definition_hash="",
        quarantined_at=None,
        quarantine_reason="",
    )


@transaction.atomic
def tool_definition_hold(
    *,
    actor,
    tool: Tool,
    definition: dict[str, Any],
    seen_in: str,
    reason: str = QuarantineReason.CHANGED,
) -> bool:
    """Keep ``definition`` beside the approved one and quarantine the tool (audited).

    ``seen_in`` says where it was seen (``sync``, ``call``). Returns whether
    anything changed: the approved definition itself, or the same pending or
    rejected one seen again, changes nothing.
    """
    tool = _locked(tool)
    digest = definition_hash(definition)
    if digest == tool.approved_definition_hash:
        return False
    before = _state(tool)
    if digest == tool.rejected_definition_hash:
        if tool.quarantined_at is not None:
            return False
        reason, fields = QuarantineReason.REJECTED, {"pending_definition": None}
        fields["pending_definition_hash"] = ""
    elif digest == tool.pending_definition_hash and tool.quarantined_at is not None:
        return False
    else:
        if tool.quarantine_reason == QuarantineReason.NEW_TOOL:
            reason = QuarantineReason.NEW_TOOL  # still never approved
        fields = {
            "pending_definition": definition,
            "pending_definition_hash": digest,
            "pending_definition_seen_by": actor if getattr(actor, "pk", None) else None,
        }
    fields.update(quarantined_at=tool.quarantined_at or timezone.now(), quarantine_reason=reason)
    _set(tool, **fields)
    audit_record(
        actor=actor,
        action=CHANGED,
        target=tool,
        before=before,
        after={
            **_state(tool),
            "seen_in": seen_in,
            "diff": definition_diff(tool.approved_definition, definition)[:DIFF_LINES_AUDITED],
        },
    )
    return True


@transaction.atomic
def tool_definition_restore(*, actor, tool: Tool) -> bool:
    """The server shows the approved definition again: lift the quarantine (audited)."""
    tool = _locked(tool)
    if tool.quarantined_at is None or tool.quarantine_reason == QuarantineReason.NEW_TOOL:
        return False
    before = _state(tool)
    _set(
        tool,
        pending_definition=None,
        pending_definition_hash="",
        pending_definition_seen_by=None,
        quarantined_at=None,
        quarantine_reason="",
    )
    audit_record(actor=actor, action=RESTORED, target=tool, before=before, after=_state(tool))
    return True


def _last_server_editor_id(tool: Tool) -> int | None:
    server_id = (tool.tool_metadata or {}).get("mcp_server_id")
    if not server_id:
        return None
    return (
        AuditEvent.objects.filter(
            target_type=MCPServer._meta.label_lower,
            target_id=str(server_id),
            action__in=("mcp_server.created", "mcp_server.updated"),
        )
        .order_by("-id")
        .values_list("actor_id", flat=True)
        .first()
    )


def _check_decider(actor, tool: Tool, *, approving: bool) -> None:
    if actor is None:  # a definition is decided by a person, never by the system
        raise PermissionDenied(POLICY["definition.decide"].refusal)
    policy_check(actor=actor, action="definition.decide", tool=tool)
    if tool.pending_definition is None:
        raise Conflict(
            f"Tool '{tool.name}' has no pending definition to decide on.",
            code="no_pending_definition",
        )
    if not (approving and tool.requires_approval):
        return
    if actor.pk in (tool.pending_definition_seen_by_id, _last_server_editor_id(tool)):
        raise PermissionDenied(
            f"'{tool.name}' requires human approval: its new definition must be approved by "
            "another platform admin than the one who synced it or last changed its MCP server.",
            code="four_eyes",
        )


# Executions registers how an approved definition of an MCP server reaches the tool's
# description and parameters (the sync's own code: registry does not import it).
_apply_handler: Callable[..., Any] | None = None


def definition_apply_handler_register(handler: Callable[..., Any]) -> None:
    """Install ``handler(*, actor, tool, definition)`` (called by executions when ready)."""
    global _apply_handler
    _apply_handler = handler


@transaction.atomic
def tool_definition_approve(*, actor, tool: Tool, reason: str = "") -> Tool:
    """Make the pending definition the approved one and lift the quarantine (audited)."""
    tool = _locked(tool)
    _check_decider(actor, tool, approving=True)
    before = {**_state(tool), "approved_definition": tool.approved_definition}
    definition = tool.pending_definition
    diff = definition_diff(tool.approved_definition, definition)
    tool_definition_pin(tool=tool, definition=definition)
    Tool.objects.filter(pk=tool.pk).update(definition_changed_at=timezone.now())
    if _apply_handler is not None:
        _apply_handler(actor=actor, tool=tool, definition=definition)
    audit_record(
        actor=actor,
        action=APPROVED,
        target=tool,
        before=before,
        after={**_state(tool), "reason": reason, "diff": diff[:DIFF_LINES_AUDITED]},
    )
    return Tool.objects.get(pk=tool.pk)


@transaction.atomic
def tool_definition_reject(*, actor, tool: Tool, reason: str = "") -> Tool:
    """Keep the approved definition; the tool stays quarantined while its server serves
    the rejected one (a tool never approved is deactivated too). Audited."""
    tool = _locked(tool)
    _check_decider(actor, tool, approving=False)
    before = _state(tool)
    never_approved = tool.quarantine_reason == QuarantineReason.NEW_TOOL
    _set(
        tool,
        rejected_definition_hash=tool.pending_definition_hash,
        pending_definition=None,
        pending_definition_hash="",
        pending_definition_seen_by=None,
        quarantine_reason=QuarantineReason.NEW_TOOL
        if never_approved
        else QuarantineReason.REJECTED,
    )
    if never_approved and tool.is_active:
        _set(tool, is_active=False)
    audit_record(
        actor=actor,
        action=REJECTED,
        target=tool,
        before=before,
        after={**_state(tool), "reason": reason, "deactivated": never_approved},
    )
    return tool
