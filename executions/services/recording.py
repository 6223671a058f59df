"""Writing a call's record: a refusal, or an admitted call before it runs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from executions.jsonsafe import json_safe, storable_text
from executions.models import Approval, ApprovalReason, Execution, ExecutionStatus
from executions.services.admission import Admission, Caller, Refusal
from executions.services.execution_audit import (
    audit_execution,
    canonical_json,
    cost_of,
    execution_audit_event,
    executions_audited,
    input_hash,
)
from executions.services.refusal_secrets import without_secret_values, without_secrets
from executions.services.sealed_inputs import sealed_write
from executions.services.transitions import approval_snapshot
from registry import authorization, snapshot
from registry.models import Action, Tool
from registry.services.audit import audit_record
from toolhub import context, rows, tracing

# The Execution row is written on every call: one prepared INSERT shape (toolhub/rows.py).
EXECUTION_ROWS = rows.writer_for(Execution)
# How much of a refusal's message and raw text the row keeps.
MESSAGE_LIMIT = 2000
RAW_INPUT_LIMIT = 65536


def refusal_write(refusal: Refusal, *, tool_ref: Any) -> Execution:
    """Record a refused call (reason = the refusal's code): its row and audit event."""
    return _record_refusal(
        caller=refusal.caller,
        tool=refusal.tool,
        requested=str(tool_ref),
        status=refusal.status,
        reason=refusal.code,
        message=refusal.message or refusal.error.message,
        inputs=refusal.inputs,
        raw_input=refusal.raw_input,
        secrets=refusal.secrets,
        guard_decisions=list(refusal.guard_decisions),
    )


def admitted_record(admission: Admission, tool_ref: Any, entries, now) -> Execution:
    """The unsaved row of an admitted call (with the cached answer when there is one)."""
    tool, stored, sealed, cached = (
        admission.tool,
        admission.stored,
        admission.sealed,
        admission.cached,
    )
    execution = call_record(
        admission.caller,
        tool,
        tool_ref,
        entries,
        status=admission.status,
        input_data=stored,
        input_hash=admission.digest,
        input_defaults=list(admission.defaulted),
        # What the tool needs and the record does not show (a cached answer runs nothing).
        sealed_secrets="" if cached else sealed_write(sealed),
        chars_in=len(canonical_json(stored)),
        cost=Decimal(0) if cached else cost_of(tool),  # a cached answer calls nothing
        created_at=now,
        queued_at=now if admission.status == ExecutionStatus.QUEUED else None,
        guard_decisions=list(admission.guard_decisions),
    )
    if cached:
        execution.cached_from_id = cached["execution_id"]
        execution.output_data = cached["output_data"]
        execution.output_truncated = cached["output_truncated"]
        execution.output_artifact = cached["output_artifact"] or ""
        execution.output_size = cached["output_size"]
        execution.chars_out = cached["chars_out"] or 0
        execution.started_at = execution.finished_at = now
        execution.execution_time_ms = 0.0
    return execution


def _record_refusal(
    *,
    caller: Caller,
    tool: Tool | None,
    requested: str,
    status: str,
    reason: str,
    message: str,
    inputs: Any = None,
    raw_input: str = "",
    secrets: Iterable[str] = (),
    guard_decisions: list[dict] | None = None,
) -> Execution:
    """Write a refused call's row and audit event. ``secrets``: every text form of
    the secret values given in the call, removed from the message, the raw text
    and the arguments kept (wherever another key or argument repeats them)."""
    secrets = list(secrets)
    kept = without_secret_values(json_safe(inputs), secrets) if isinstance(inputs, dict) else None
    now = timezone.now()
    execution = call_record(
        caller,
        tool,
        requested,
        status=status,
        reason_code=reason,
        # Refused input is kept as received, minus what no record can hold.
        input_data=kept,
        raw_input=without_secrets(raw_input, secrets, RAW_INPUT_LIMIT)[:RAW_INPUT_LIMIT],
        input_hash=input_hash(kept) if kept is not None else "",
        error_message=without_secrets(message, secrets, MESSAGE_LIMIT)[:MESSAGE_LIMIT],
        created_at=now,  # decided and finished at the same moment, never before
        finished_at=now,
        guard_decisions=guard_decisions or [],
    )
    rows.insert_together(execution, execution_audit_event(execution, f"execution.{status}"))
    executions_audited(execution)
    return execution


def call_record(
    caller: Caller, tool: Tool | None, requested: Any, entries=None, **fields
) -> Execution:
    """An unsaved Execution naming the tool, the caller and the request, plus ``fields``."""
    ctx = context.current()
    return Execution(
        tool=tool,
        tool_name=tool.name if tool else "",
        tool_version=tool.version if tool else "",
        tool_type=tool.type if tool else "",
        requested_tool=storable_text(str(requested))[:200],
        agent=caller.agent,
        principal=caller.user,
        principal_name=caller.name,
        # Four eyes holds against who owned the agent then, whoever owns it later.
        agent_owner_id=caller.agent.owner_id if caller.agent is not None else None,
        role=caller.role,
        roles_used=_role_names(caller, tool, entries),
        request_id=ctx.request_id,
        trace_id=tracing.current_trace_id(),
        client_address=ctx.client_address,
        entry_point=ctx.entry_point,
        client_name=storable_text(ctx.client_name)[:200],
        client_version=storable_text(ctx.client_version)[:100],
        protocol_version=storable_text(ctx.protocol_version)[:20],
        oauth_client_id=ctx.oauth_client_id[:255],
        oauth_client_name=storable_text(ctx.oauth_client_name)[:200],
        **fields,
    )


def _role_names(caller: Caller, tool: Tool | None = None, entries=None) -> list[str]:
    """The roles the call acted with: those of the caller's (narrowed) roles that grant
    ``execute`` on the tool; when none does (a refusal, a right given to the person
    directly), all of the caller's roles."""
    if caller.role is not None:
        return [caller.role.name]
    if not caller.user:
        return []
    if tool is not None:
        granting = snapshot.cached(
            entries,
            ("roles_granting", caller.user.pk, tool.pk),
            lambda: authorization.roles_granting(caller.user, Action.EXECUTE, tool),
        )
        if granting:
            return list(granting)
    return authorization.role_names_of(caller.user)


def admitted_write(
    execution: Execution,
    tool: Tool,
    digest: str,
    now,
    on_admitted: Callable | None = None,
    *,
    approval_reason: str = "",
) -> None:
    """Write an admitted call's row and its audit event (and its approval, when it waits
    for one, with why: ``approval_reason``), then tell ``on_admitted``."""
    status = execution.status
    action = f"execution.{status}"
    if status == ExecutionStatus.PENDING_APPROVAL:
        with transaction.atomic():
            EXECUTION_ROWS.insert(execution)
            approval = Approval.objects.create(
                execution=execution,
                input_hash=digest,
                expires_at=now + timedelta(seconds=tool.approval_ttl_seconds),
                required_because=approval_reason,
                condition_matched=(
                    tool.approval_condition if approval_reason == ApprovalReason.CONDITION else None
                ),
            )
            audit_execution(execution, action)
            # Why it waits and until when, on the record: the row must keep saying it.
            audit_record(
                actor=execution.principal,
                action="approval.requested",
                target=approval,
                after=approval_snapshot(approval),
            )
    else:
        # The row and its audit event together (one statement on PostgreSQL).
        rows.insert_together(execution, execution_audit_event(execution, action))
        executions_audited(execution)
    if on_admitted is not None:
        on_admitted(execution)
