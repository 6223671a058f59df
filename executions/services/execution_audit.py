"""An execution's audit events: what they record of the call (its summary, the hash of
the whole record, the digests of its arguments and sealed secrets), how they are
appended, and the call's cost at the column's scale. Shared by the pipeline, the
runner, the transitions and the record checks."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Case, DecimalField, Value, When

from executions.models import (
    Execution,
)
from executions.services.admitted import admitted_values
from registry.canonical import address_form, canonical_json, stored_form, time_form
from registry.services.audit import ROWS as AUDIT_ROWS
from registry.services.audit import audit_event, audit_written
from toolhub.metrics import record_execution

# A row and its first audit event are written in one statement, microseconds apart:
# retention's cut is only trusted this far from either side (audit_verify's checks).
RETENTION_MARGIN = timedelta(seconds=1)


def not_charged() -> Case:
    """For an UPDATE ending a call that never ran (cancelled, rejected, expired,
    denied in the queue, timed out waiting): cost 0 where the tool has one."""
    return Case(
        When(cost__isnull=True, then=Value(None)),
        default=Value(Decimal(0)),
        output_field=DecimalField(
            max_digits=_COST_FIELD.max_digits, decimal_places=_COST_FIELD.decimal_places
        ),
    )


def input_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()


def arguments_digest(value: Any) -> str:
    """A hash of stored arguments in the form they have both when written and read back
    (numbers as jsonb keeps them): ``input_hash`` of a read-back row may differ."""
    arguments = canonical_json(stored_form(value)) if value is not None else ""
    return hashlib.sha256(arguments.encode("utf-8", "surrogatepass")).hexdigest()


def sealed_digest(sealed: str) -> str:
    """A hash of the encrypted secrets a call carries ("" when none): binds them to the
    call without saying anything about them."""
    return hashlib.sha256(sealed.encode()).hexdigest() if sealed else ""


_COST_FIELD = Execution._meta.get_field("cost")
COST_SCALE = Decimal(1).scaleb(-_COST_FIELD.decimal_places)
_COST_LIMIT = Decimal(10) ** (_COST_FIELD.max_digits - _COST_FIELD.decimal_places)


def cost_of(tool) -> Decimal | None:
    """The tool's cost per call, at the column's scale (as the row will store it)."""
    raw = (tool.tool_metadata or {}).get("cost_per_call") if tool is not None else None
    if raw is None:
        return None
    try:
        cost = Decimal(str(raw)).quantize(COST_SCALE)
    except (InvalidOperation, ValueError):
        return None
    return cost if cost.is_finite() and abs(cost) < _COST_LIMIT else None


# What an execution event's content_hash covers. Version 2 (events say
# "content_version": 2) adds the call's request id, client address, timings,
# sizes, what was asked for and the stored arguments of every record (refusals
# included). Version 3 adds the claim's bookkeeping (worker, deadline, heartbeat) and
# the encrypted secrets a finished call still holds (none). Version 4 adds the entry
# point, the MCP client's name and version, the protocol revision and the guards'
# decisions. Version 5 adds the OAuth client a call came through; version 6 the
# caller's upstream connection it used (its id). Events written before keep the hash of
# their version, checked as such.
CONTENT_VERSION = 6


def execution_content_hash(execution: Execution, version: int = CONTENT_VERSION) -> str:
    """A hash of everything the execution record says, so the audit chain covers it.

    Numbers are hashed as normalized decimals (``stored_form``), the cost at the
    column's scale and addresses as their bytes, so the hash is the same whether
    computed from the values being written or from the stored row.
    """
    output = (
        canonical_json(stored_form(execution.output_data))
        if execution.output_data is not None
        else ""
    )
    content = {
        "id": str(execution.pk),
        "tool_id": str(execution.tool_id) if execution.tool_id else None,
        "tool_name": execution.tool_name,
        "tool_version": execution.tool_version,
        "agent_id": str(execution.agent_id) if execution.agent_id else None,
        "principal_name": execution.principal_name,
        "roles_used": execution.roles_used,
        "status": execution.status,
        "reason_code": execution.reason_code,
        "input_hash": execution.input_hash,
        "raw_input": execution.raw_input,
        "output_sha256": hashlib.sha256(output.encode()).hexdigest(),
        "output_truncated": execution.output_truncated,
        "output_artifact": execution.output_artifact,
        "error_type": execution.error_type,
        "error_message": execution.error_message,
        "upstream_status": execution.upstream_status,
        "attempts": execution.attempts,
        "created_at": execution.created_at,
        "started_at": execution.started_at,
        "finished_at": execution.finished_at,
        "cached_from": str(execution.cached_from_id) if execution.cached_from_id else None,
        # Normalized, so the in-memory value and the column's scale hash alike.
        "cost": format(Decimal(execution.cost).normalize(), "f")
        if execution.cost is not None
        else None,
    }
    if version >= 2:
        content.update(
            requested_tool=execution.requested_tool,
            tool_type=execution.tool_type,
            request_id=execution.request_id,
            client_address=address_form(execution.client_address),
            queued_at=time_form(execution.queued_at),
            execution_time_ms=stored_form(execution.execution_time_ms),
            chars_in=execution.chars_in,
            chars_out=execution.chars_out,
            output_size=execution.output_size,
            input_sha256=arguments_digest(execution.input_data),
        )
    if version >= 3:
        content.update(
            worker=execution.worker,
            deadline_at=time_form(execution.deadline_at),
            heartbeat_at=time_form(execution.heartbeat_at),
            sealed_sha256=sealed_digest(execution.sealed_secrets),
        )
    if version >= 4:
        content.update(
            entry_point=execution.entry_point,
            client_name=execution.client_name,
            client_version=execution.client_version,
            protocol_version=execution.protocol_version,
        )
        content["guard_decisions"] = stored_form(execution.guard_decisions or [])
    if version >= 5:
        content.update(
            oauth_client_id=execution.oauth_client_id,
            oauth_client_name=execution.oauth_client_name,
        )
    if version >= 6:
        content["upstream_connection_id"] = execution.upstream_connection_id
    return hashlib.sha256(canonical_json(content).encode()).hexdigest()


def execution_summary(execution: Execution) -> dict:
    """What the audit log keeps of an execution decision (never inputs or outputs)."""
    return {
        "execution_id": str(execution.pk),
        "tool": execution.tool_name or execution.requested_tool,
        "tool_version": execution.tool_version,
        "agent_id": str(execution.agent_id) if execution.agent_id else None,
        "principal": execution.principal_name,
        "roles": execution.roles_used,
        "status": execution.status,
        "reason_code": execution.reason_code,
        "error_type": execution.error_type,
        "input_hash": execution.input_hash,
        "attempts": execution.attempts,
        # Which guards decided what (places and labels only, never the text found).
        "guard_decisions": execution.guard_decisions or [],
        "content_version": CONTENT_VERSION,
        "content_hash": execution_content_hash(execution),
        # What the call carries, recorded by every event: an open call must still carry
        # what its admission event recorded (the worker refuses it otherwise).
        "input_sha256": arguments_digest(execution.input_data),
        "sealed_sha256": sealed_digest(execution.sealed_secrets),
        # Which arguments the schema's defaults filled in (fixed at admission).
        "input_defaults": execution.input_defaults or [],
        # Outside the hash: set to null, legitimately, when the user or role is
        # deleted; otherwise they must still be these (``altered_executions``).
        "principal_id": execution.principal_id,
        "role_id": execution.role_id,
        "agent_owner_id": execution.agent_owner_id,
        # What admission fixed of the call (tool, caller, roles, door, guards, defaults):
        # the row must still say it, open or finished (``executions.services.admitted``).
        "admitted": admitted_values(execution),
    }


def audit_execution(execution: Execution, action: str, *, actor=None) -> None:
    """Append the audit event of an execution decision (in the caller's transaction)."""
    AUDIT_ROWS.insert(execution_audit_event(execution, action, actor=actor))
    executions_audited(execution)


def audit_execution_change(execution: Execution, action: str, *, actor) -> None:
    """Audit a change made to a finished record by ``actor`` (None: the system, never
    the caller of the execution)."""
    AUDIT_ROWS.insert(audit_event(**{**_audit_fields(execution, action, actor), "actor": actor}))
    audit_written()


def execution_audit_event(execution: Execution, action: str, *, actor=None):
    """The event ``audit_execution`` would append, unsaved: for a combined write
    (``toolhub/rows.py``); call ``executions_audited`` once it is written."""
    return audit_event(**_audit_fields(execution, action, actor))


def executions_audited(execution: Execution) -> None:
    """What follows writing an execution's audit event: sealing (embedded mode) and,
    for a finished call, the metrics, once committed."""
    audit_written()
    if execution.is_terminal:
        transaction.on_commit(partial(record_execution, execution))


def _audit_fields(execution: Execution, action: str, actor) -> dict:
    return {
        "actor": actor if actor is not None else execution.principal,
        "action": action,
        "target_type": "executions.execution",
        "target_id": str(execution.pk),
        "target_repr": f"{execution.tool_name or execution.requested_tool} by {execution.principal_name}"[
            :200
        ],
        "after": execution_summary(execution),
    }


def round_trips(value: Any) -> bool:
    """Whether every number in ``value`` reads back as it was hashed (JSONB writes
    1e+20 as 100000000000000000000, which reads back as an int)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and ("e" in repr(item) or "inf" in repr(item)):
            return False
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 10**15:
            return False
    return True
