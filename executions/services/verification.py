"""What ``audit_verify`` checks of the execution records: each row against its events.

Finished rows against the content hash their latest event recorded, open and
finished rows against their admission event (``integrity``), rows the log has
events of but that are gone, and rows written without an event (approvals:
``approval_verification``). Registered as record checks of the audit chain by
``ExecutionsConfig.ready()``.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import datetime

from django.db.models import Max

from executions.models import (
    TERMINAL_STATUSES,
    Approval,
    Execution,
    ExecutionStatus,
)
from executions.services.admitted import events_disagree, recorded_admission
from executions.services.execution_audit import (
    RETENTION_MARGIN,
    execution_content_hash,
    input_hash,
    round_trips,
)
from executions.services.integrity import admission_mismatch, authentic_events
from executions.services.run_evidence import unpermitted_run
from registry.canonical import time_form

# The target type of the records these checks name (the admin flags their pages).
_EXECUTION = Execution._meta.label_lower


def with_events(ordered, chunk: int):
    """``ordered`` (a queryset by primary key) in chunks, each with the authentic audit
    events of each of its rows, oldest first: ``(rows, {target id: [(sequence, after),
    ...]})``. An event the sealer refused, or an unsealed one whose MAC fails, never
    vouches for a record (``unsealed_forgeries`` names it)."""
    from registry.models import AuditEvent

    last_pk = None
    while True:
        page = ordered if last_pk is None else ordered.filter(pk__gt=last_pk)
        rows = list(page[:chunk])
        if not rows:
            return
        last_pk = rows[-1].pk
        events = (
            AuditEvent.objects.filter(
                target_type=ordered.model._meta.label_lower,
                target_id__in=[str(r.pk) for r in rows],
            )
            .order_by("id")
            .values_list("id", "target_id", "sequence", "sealed_at", "after")
        )
        recorded: dict[str, list[tuple[int | None, dict]]] = {}
        # A plain query, not .iterator(): on PostgreSQL that is a cursor, planned for its
        # first rows, which walked the whole event table in id order for every chunk.
        events = list(events)
        # Sealed events the chain walk checks; the sealer refused those it marked.
        unsealed = authentic_events(
            [e[0] for e in events if e[2] is None and e[3] is None]  # id, sequence, sealed_at
        )
        for event_id, target_id, sequence, _, after in events:
            if sequence is None and event_id not in unsealed:
                continue
            recorded.setdefault(target_id, []).append((sequence, after or {}))
        yield rows, recorded


def altered_executions(chunk: int = 2000):
    """Executions that no longer match what their audit events recorded: a row
    changed behind the services' back (``audit_verify``).

    Compared: every execution whose latest event recorded a finished status (also
    one set back to queued or running since), against the event's ``content_hash``;
    a finished execution whose latest event recorded it unfinished is named too;
    every execution, open or finished, against what its first event recorded of
    the call it carries (its arguments, their hash, its encrypted secrets), which
    no later event may contradict; and a call admitted to wait for approval must
    still have its approval. Calls still queued or running change without an
    event (the claim, the attempts); a record whose events retention removed has
    nothing to be compared with.

    Also named: a record with no audit event at all, created after the latest
    retention cut: every call's row is written together with its first event, so
    it was written behind the services' back. (Retention may have removed the
    first event of an older call that was still open at the cut.)
    """
    from registry.models import AuditCheckpoint
    from registry.services.audit_chain import Problem

    newest_cut = max(AuditCheckpoint.objects.values_list("removed_before", flat=True), default=None)
    held_from = newest_cut + RETENTION_MARGIN if newest_cut is not None else None
    for rows, recorded in with_events(Execution.objects.order_by("pk"), chunk):
        approved = _with_approval(rows, recorded)
        for execution in rows:
            history = recorded.get(str(execution.pk))
            if history is None:
                if held_from is None or execution.created_at >= held_from:
                    yield Problem(
                        "record_unaudited",
                        None,
                        None,
                        f"Execution {execution.pk} has no audit event: its record was written "
                        "behind ToolHub's back (every call is recorded with its first event).",
                        target_type=_EXECUTION,
                        target_id=str(execution.pk),
                    )
                continue
            problem = (
                _finished_record_problem(execution, *history[-1])
                or _admission_problem(execution, history)
                or _approval_problem(execution, history, approved)
                or unpermitted_run(execution, history)
            )
            if problem is not None:
                yield problem


def _named(execution: Execution) -> str:
    return f"Execution {execution.pk} ({execution.tool_name or execution.requested_tool})"


def _where(sequence: int | None, what: str = "its latest event") -> str:
    return f"event #{sequence}" if sequence else f"{what} (not sealed yet)"


def _finished_record_problem(execution: Execution, sequence: int | None, after: dict):
    """A finished record that no longer says what its latest event recorded."""
    from registry.services.audit_chain import Problem

    where, named = _where(sequence), _named(execution)
    if execution.status in TERMINAL_STATUSES and after.get("status") not in TERMINAL_STATUSES:
        # Every finish is written with its event: this one was not.
        return Problem(
            "record_altered",
            sequence,
            None,
            f"{named} is {execution.status}, but {where} recorded it "
            f"{after.get('status') or 'without a status'}: it was finished behind "
            "ToolHub's back.",
            target_type=_EXECUTION,
            target_id=str(execution.pk),
        )
    if after.get("status") not in TERMINAL_STATUSES or not after.get("content_hash"):
        return None
    moved = [
        name
        for name in ("principal_id", "role_id", "agent_owner_id")
        if getattr(execution, name) is not None
        and name in after
        and getattr(execution, name) != after[name]
    ]
    if moved:
        return Problem(
            "record_altered",
            sequence,
            None,
            f"{named} now names another {' and '.join(moved)} than {where} "
            "recorded: the record was altered after it was written.",
            target_type=_EXECUTION,
            target_id=str(execution.pk),
        )
    version = after.get("content_version", 1)
    if execution_content_hash(execution, version) != after["content_hash"]:
        return Problem(
            "record_altered",
            sequence,
            None,
            f"{named} no longer matches the content hash {where} recorded (it was "
            f"{after['status']}, it is {execution.status}): the record was altered "
            "after it was written.",
            target_type=_EXECUTION,
            target_id=str(execution.pk),
        )
    if _arguments_altered(execution):
        return Problem(
            "record_altered",
            sequence,
            None,
            f"{named}: its stored arguments no longer match their hash: they were "
            "altered after the call was admitted.",
            target_type=_EXECUTION,
            target_id=str(execution.pk),
        )
    return None


# What every event of a call records of the call it carries: never different.
_CARRIED = ("input_hash", "input_sha256")


def _admission_problem(execution: Execution, history: list[tuple[int | None, dict]]):
    """A record (open or finished) that no longer carries the call its first authentic
    event recorded (its arguments and every admitted field), or whose events disagree
    about that call."""
    from registry.services.audit_chain import Problem

    first_sequence, first = history[0]
    admitted = _where(first_sequence, "its first event")
    first_admission = recorded_admission(first)
    for sequence, after in history[1:]:
        differ = [k for k in _CARRIED if k in after and k in first and after[k] != first[k]]
        differ += events_disagree(first_admission, recorded_admission(after))
        if differ:
            return Problem(
                "record_altered",
                sequence,
                None,
                f"{_named(execution)}: {_where(sequence)} recorded another "
                f"{' and '.join(differ)} than {admitted}: the call was altered after it "
                "was admitted.",
                target_type=_EXECUTION,
                target_id=str(execution.pk),
            )
    changed = admission_mismatch(execution, first)
    if changed:
        return Problem(
            "record_altered",
            first_sequence,
            None,
            f"{_named(execution)} ({execution.status}): its {' and '.join(changed)} no longer "
            f"match what {admitted} recorded: the call was altered after it was admitted.",
            target_type=_EXECUTION,
            target_id=str(execution.pk),
        )
    return None


def _waited_for_approval(history) -> bool:
    return any(after.get("status") == ExecutionStatus.PENDING_APPROVAL for _, after in history)


def _with_approval(rows, recorded) -> set:
    """The ids of those of ``rows`` that waited for approval and still have their approval."""
    waited = [r.pk for r in rows if _waited_for_approval(recorded.get(str(r.pk), ()))]
    if not waited:
        return set()
    return set(
        Approval.objects.filter(execution_id__in=waited).values_list("execution_id", flat=True)
    )


def _approval_problem(execution: Execution, history, approved: set):
    """A call admitted to wait for approval whose approval record is gone (retention
    removes an approval only with its call)."""
    from registry.services.audit_chain import Problem

    if execution.pk in approved or not _waited_for_approval(history):
        return None
    sequence = next(
        s for s, after in history if after.get("status") == ExecutionStatus.PENDING_APPROVAL
    )
    return Problem(
        "record_deleted",
        sequence,
        None,
        f"{_named(execution)} waited for approval ({_where(sequence, 'its first event')}) "
        "but its approval record is gone: it was deleted behind ToolHub's back.",
        target_type=_EXECUTION,
        target_id=str(execution.pk),
    )


# Refusals keep the arguments as received (and may not have parsed): only an admitted
# call's stored arguments are exactly what its input_hash was computed from.
_REFUSED = (ExecutionStatus.DENIED, ExecutionStatus.INVALID)


def _arguments_altered(execution: Execution) -> bool:
    if execution.status in _REFUSED or not isinstance(execution.input_data, dict):
        return False
    if not execution.input_hash or not round_trips(execution.input_data):
        return False
    return input_hash(execution.input_data) != execution.input_hash


def deleted_executions(chunk: int = 2000):
    """Execution records deleted behind the services' back (``audit_verify``): an
    execution the audit log has an event of, but no row, that retention cannot have
    removed. Retention removes only calls created before its cut (``removed_before``)
    and finished before it ran (the checkpoint's ``created_at``), and nothing else
    ToolHub does removes a record (its foreign keys protect it or are set to null).
    So a missing call is named when one of its events is from after the latest
    retention run, or when its events record that it was created at or after the
    latest cut (every event records the call's ``created_at`` with what admission
    fixed). A call created before the cut may have gone with retention; the
    retention export holds those.

    One pass over the event index (from the latest cut on) in target order, checked
    in chunks.
    """
    from registry.models import AuditCheckpoint, AuditEvent

    events = AuditEvent.objects.filter(target_type=_EXECUTION)
    latest = AuditCheckpoint.objects.aggregate(cut=Max("removed_before"), ran=Max("created_at"))
    if latest["cut"] is not None:
        events = events.filter(occurred_at__gte=latest["cut"])
    mentioned = (
        events.order_by("target_id").values_list("target_id", flat=True).distinct()
    ).iterator(chunk_size=chunk)
    while batch := list(itertools.islice(mentioned, chunk)):
        wanted: dict[str, uuid.UUID | None] = {}
        for target_id in batch:
            try:
                wanted[target_id] = uuid.UUID(target_id)
            except ValueError:  # no execution could have this id
                wanted[target_id] = None
        ids = [pk for pk in wanted.values() if pk is not None]
        found = set(Execution.objects.filter(pk__in=ids).values_list("pk", flat=True))
        for target_id, pk in wanted.items():
            if pk not in found:
                yield from _deleted(target_id, events.filter(target_id=target_id), latest)


def _deleted(target_id: str, events, latest: dict):
    """The problem of a missing execution, from its first event that proves retention
    did not remove it (none: its events went while this ran, or it may have)."""
    from registry.services.audit_chain import Problem

    ran = latest["ran"]
    for event in events.order_by("id"):
        created = _time(recorded_admission(event.after or {}).get("created_at"))
        after_run = ran is None or event.occurred_at > ran + RETENTION_MARGIN
        if after_run or (created is not None and created >= latest["cut"]):
            when = (
                "after the latest retention ran"
                if after_run
                else f"created {time_form(created)}, after the latest retention cut"
            )
            yield Problem(
                "record_deleted",
                event.sequence,
                event.pk,
                f"Execution {target_id} is in the audit log (event id {event.pk}, "
                f"{event.action}; {when}) but its record is gone: it was deleted behind "
                "ToolHub's back (retention removes only calls created before its cut and "
                "finished before it runs).",
                target_type=_EXECUTION,
                target_id=str(target_id),
            )
            return


def _time(value) -> datetime | None:
    """A time an event recorded (``time_form``), or None."""
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
