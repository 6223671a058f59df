"""The one way an execution changes status: a conditional UPDATE, its audit event, a wake-up.

``execution_move`` claims the row (``filter(pk, status__in=from).update(...)``,
healthchecks' ``sendalerts`` pattern) and writes the audit event only when the
claim won, so two processes ending the same call end it once. Every move is
checked against ``executions.models.STATUS_TRANSITIONS`` before it is tried (the
database trigger holds the same table). ``approval_close`` is the one way an
undecided approval closes because its call ends without running.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from executions.models import (
    STATUS_TRANSITIONS,
    TERMINAL_STATUSES,
    Approval,
    ApprovalStatus,
    Execution,
    ExecutionStatus,
)
from executions.services import notify
from executions.services.execution_audit import (
    audit_execution,
    execution_audit_event,
    executions_audited,
    not_charged,
)
from registry.canonical import time_form
from registry.services.audit import audit_record
from toolhub import rows


class IllegalTransition(ValueError):
    """A move the state machine does not have (a bug of the caller, never user input)."""


def check_transition(from_statuses: Iterable[str], to: str) -> None:
    for status in from_statuses:
        if to not in STATUS_TRANSITIONS.get(status, ()):
            raise IllegalTransition(f"an execution cannot go from {status} to {to}")


def not_run() -> dict[str, Any]:
    """The fields of a call that ends without running: no secrets kept, nothing charged."""
    return {"sealed_secrets": "", "cost": not_charged()}


def execution_move(
    execution_id,
    *,
    from_statuses: Iterable[str],
    to: str,
    actor: Any = None,
    notify_waiters: bool = True,
    where: dict[str, Any] | None = None,
    **fields: Any,
) -> Execution | None:
    """Move the call from one of ``from_statuses`` to ``to`` with ``fields``, audited;
    the row as it now is, or None when it was no longer in ``from_statuses`` (or no
    longer matched ``where``)."""
    from_statuses = list(from_statuses)
    check_transition(from_statuses, to)
    with transaction.atomic():  # the row and its event together
        moved = Execution.objects.filter(
            pk=execution_id, status__in=from_statuses, **(where or {})
        ).update(status=to, **fields)
        if not moved:
            return None
        execution = Execution.objects.get(pk=execution_id)
        audit_execution(execution, f"execution.{to}", actor=actor)
    if notify_waiters and to in TERMINAL_STATUSES:
        notify.notify_done(execution_id)
    return execution


def execution_finish(execution: Execution, fields: dict[str, Any], *, actor: Any) -> bool:
    """``running → succeeded/failed`` with the row as it is about to be written:
    ``execution`` already holds ``fields``, its event describes it and nothing is
    read back; the guarded UPDATE and, only if it changed the row, the event go
    in one statement on PostgreSQL. Whether this process ended the call."""
    check_transition([ExecutionStatus.RUNNING], fields["status"])
    event = execution_audit_event(execution, f"execution.{fields['status']}", actor=actor)
    done = rows.update_then_insert(
        Execution, execution.pk, fields, where={"status": ExecutionStatus.RUNNING}, then=event
    )
    if done:
        executions_audited(execution)
    return done


def execution_claim(execution: Execution, fields: dict[str, Any]) -> bool:
    """``queued → running`` with ``fields`` for the process that runs the call; whether
    this process won it. ``execution`` then holds what was written (not read back).

    A written row is claimed by a conditional UPDATE: of two claimers, one wins (no
    event: the finish records it). A row being admitted (not written yet) is claimed
    as it stands: its INSERT, as ``running`` with its admission event, writes the
    claim, and no other process can see the row before it.
    """
    check_transition([execution.status], ExecutionStatus.RUNNING)
    if not execution._state.adding:
        won = Execution.objects.filter(pk=execution.pk, status=ExecutionStatus.QUEUED).update(
            status=ExecutionStatus.RUNNING, **fields
        )
        if not won:
            return False
    execution.status = ExecutionStatus.RUNNING
    for name, value in fields.items():
        setattr(execution, name, value)
    return True


def approval_snapshot(approval: Approval) -> dict:
    """What an approval's audit events record of it (``approval_verification``): every
    field the decision rests on, why the call waits as well as who decided."""
    return {
        "approval_id": str(approval.pk),
        "execution_id": str(approval.execution_id),
        "tool": approval.execution.tool_name,
        "status": approval.status,
        "decided_by": approval.decided_by_name,
        # Only deleting that user may clear the column (the name stays).
        "decided_by_id": approval.decided_by_id,
        "reason": approval.reason,
        "input_hash": approval.input_hash,
        "decided_at": time_form(approval.decided_at),
        "required_because": approval.required_because,
        "condition_matched": approval.condition_matched,
        "requested_at": time_form(approval.requested_at),
        "expires_at": time_form(approval.expires_at),
    }


def approval_close(approval: Approval, *, actor: Any, now, **fields: Any) -> bool:
    """Close ``approval`` while it is still pending, audited; whether this did."""
    won = Approval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
        decided_at=now, **fields
    )
    if won:
        approval.refresh_from_db()
        audit_record(
            actor=actor,
            action=f"approval.{approval.status}",
            target=approval,
            after=approval_snapshot(approval),
        )
    return bool(won)


def approvals_close_for(execution: Execution, *, actor: Any) -> None:
    """Close the pending approval of a call that ended before anyone decided (cancelled)."""
    for approval in Approval.objects.filter(
        execution_id=execution.pk, status=ApprovalStatus.PENDING
    ).select_related("execution"):
        approval_close(
            approval,
            actor=actor,
            now=execution.finished_at,
            status=ApprovalStatus.CANCELLED,
            reason=f"The call was cancelled by {actor.get_username()}.",
        )
