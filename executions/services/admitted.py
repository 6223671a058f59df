"""What admission fixes of a call: the one list the worker, approving and ``audit_verify`` check.

Admission decides a call for one tool, one caller (principal, agent, the
agent's owner four eyes reads, the roles it acted with), one door (entry point,
MCP client, request and trace) and records the guards' decisions and the
schema's defaults. Nothing ToolHub does changes these afterwards, so every
event of a call records them (``admitted`` in ``execution_summary``) and a row
whose admitted fields no longer match its first authentic event was rewritten
in the database: the worker refuses to run it and ``audit_verify`` names it
(``executions.services.integrity``).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from executions.models import Execution
from registry.canonical import address_form, canonical_json, stored_form, time_form

ADMITTED_FIELDS = (
    "tool_id",
    "tool_name",
    "tool_version",
    "tool_type",
    "requested_tool",
    "agent_id",
    "principal_id",
    "principal_name",
    "agent_owner_id",
    "role_id",
    "roles_used",
    "input_defaults",
    "guard_decisions",
    "entry_point",
    "client_name",
    "client_version",
    "protocol_version",
    "oauth_client_id",
    "oauth_client_name",
    "request_id",
    "trace_id",
    "client_address",
    "created_at",
    # Set only when admission answers from the cache: an open call never has one.
    "cached_from_id",
)

# Foreign keys that deleting the user or role (or retention, the cached-from call)
# clears (SET_NULL): the row may hold None.
_CLEARABLE = frozenset({"principal_id", "role_id", "agent_owner_id", "cached_from_id"})

# What events written before ``admitted`` existed recorded of these, under other keys.
_EARLIER_KEYS = {
    "agent_id": "agent_id",
    "principal_id": "principal_id",
    "role_id": "role_id",
    "agent_owner_id": "agent_owner_id",
    "principal": "principal_name",
    "roles": "roles_used",
    "input_defaults": "input_defaults",
    "guard_decisions": "guard_decisions",
}


def _form(name: str, value: Any) -> Any:
    """A field's value as an event records it (the same before writing and read back)."""
    if name == "client_address":
        return address_form(value)
    if isinstance(value, datetime):
        return time_form(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if name in ("roles_used", "input_defaults", "guard_decisions"):
        return stored_form(value or [])
    return value


def admitted_values(execution: Execution) -> dict[str, Any]:
    """What every event of the call records of its admission."""
    return {name: _form(name, getattr(execution, name)) for name in ADMITTED_FIELDS}


def recorded_admission(after: dict) -> dict[str, Any]:
    """The admitted fields an event recorded (``after``), in the form of ``admitted_values``;
    from an event written before they were recorded together, those it had."""
    if isinstance(after.get("admitted"), dict):
        return after["admitted"]
    return {field: _form(field, after[key]) for key, field in _EARLIER_KEYS.items() if key in after}


def admitted_changes(execution: Execution, recorded: dict[str, Any]) -> list[str]:
    """The admitted fields of ``execution`` that differ from ``recorded``
    (``recorded_admission`` of an event of the call)."""
    now = admitted_values(execution)
    return [
        name
        for name in ADMITTED_FIELDS
        if name in recorded and not _same(name, now[name], recorded[name], execution.is_terminal)
    ]


def _same(name: str, current: Any, recorded: Any, finished: bool) -> bool:
    if name in _CLEARABLE and current is None:
        return True
    if name == "guard_decisions" and finished:
        # The after-guards add theirs when the call finishes: admission's come first.
        current = (current or [])[: len(recorded or [])]
    return canonical_json(current) == canonical_json(recorded)


def events_disagree(first: dict[str, Any], later: dict[str, Any]) -> list[str]:
    """The admitted fields a later event of a call records otherwise than the first
    (``recorded_admission`` of each)."""
    return [
        name
        for name in ADMITTED_FIELDS
        if name in first and name in later and not _same(name, later[name], first[name], True)
    ]
