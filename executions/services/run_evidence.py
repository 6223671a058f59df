"""What lets a call run: its admission queued it, or a person approved it.

A call runs only when an authentic event of its own says it may: its admission
event recorded it ``queued`` (admitted to run at once; ``running`` when it is
run in the process that admitted it) or, for a call admitted to
wait for approval, the event the approve service writes with the decision
(``execution.queued``, the approver its actor, in the transaction that writes
``approval.approved``) recorded it queued, bound to the arguments it was admitted
with (its ``input_hash``). Nothing else ToolHub does writes an event of a call
with the status ``queued`` (the state machine has no way back to it), so a row
moved to ``queued`` in the database, its approval row marked approved or not,
has no such event: the worker refuses it (``integrity_error``, ``integrity``)
and ``audit_verify`` names it, as it names a call running or finished without one.
"""

from __future__ import annotations

from collections.abc import Iterable

from executions.models import TERMINAL_STATUSES, Execution, ExecutionStatus

_EXECUTION = Execution._meta.label_lower
# The statuses a call reaches only by being let run.
_LET_RUN = frozenset(
    {
        ExecutionStatus.QUEUED,
        ExecutionStatus.RUNNING,
        ExecutionStatus.SUCCEEDED,
        ExecutionStatus.FAILED,
    }
)


# What an admission event records of a call it let run: queued for the workers, or
# claimed to run in the admitting process (``dispatch.claimed_here``) in the same write.
_ADMITTED_TO_RUN = frozenset({ExecutionStatus.QUEUED, ExecutionStatus.RUNNING})


def run_permitted(events: Iterable[dict]) -> bool:
    """Whether a call's authentic events (their ``after``, oldest first; read lazily)
    let it run: the first recorded it queued (or running: run where it was admitted), or it waited for approval and a later
    one (the approval's) recorded it queued with the arguments it was admitted with."""
    events = iter(events)
    first = next(events, None)
    if first is None:
        return False
    if first.get("status") in _ADMITTED_TO_RUN:
        return True
    if first.get("status") != ExecutionStatus.PENDING_APPROVAL:
        return False  # refused, or answered, at admission: never to run
    admitted_hash = first.get("input_hash")
    return any(
        after.get("status") == ExecutionStatus.QUEUED and after.get("input_hash") == admitted_hash
        for after in events
    )


def unpermitted_run(execution: Execution, history: list[tuple[int | None, dict]]):
    """A call queued, running or finished as run that no authentic event let run
    (``history``: its authentic events, oldest first, as ``(sequence, after)``)."""
    from registry.services.audit_chain import Problem

    if execution.status not in _LET_RUN:
        return None
    sequence, first = history[0]
    if first.get("status") in TERMINAL_STATUSES and execution.status in TERMINAL_STATUSES:
        # Answered at admission (a cached answer), or retention removed the earlier
        # events: its latest event's content hash holds the record.
        return None
    if run_permitted(after for _, after in history):
        return None
    where = f"event #{sequence}" if sequence else "its first event (not sealed yet)"
    return Problem(
        "record_altered",
        sequence,
        None,
        f"Execution {execution.pk} ({execution.tool_name or execution.requested_tool}) is "
        f"{execution.status}, but no authentic event let it run: {where} recorded it "
        f"{first.get('status') or 'without a status'} and no approval of it is recorded. "
        "Its status was changed behind ToolHub's back.",
        target_type=_EXECUTION,
        target_id=str(execution.pk),
    )
