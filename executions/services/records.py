"""Small helpers shared by the pipeline and the runner: hashing, snapshots, audit of decisions."""

from __future__ import annotations

import hashlib
import itertools
import uuid
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Case, DecimalField, Value, When

from executions.models import (
    TERMINAL_STATUSES,
    Approval,
    ApprovalStatus,
    Execution,
    ExecutionStatus,
)
from registry.canonical import address_form, canonical_json, stored_form, time_form
from registry.services.audit import ROWS as AUDIT_ROWS
from registry.services.audit import audit_event, audit_written
from toolhub.metrics import record_execution

# A row and its first audit event are written in one statement, microseconds apart:
# retention's cut is only trusted this far from either side (audit_verify's checks).
_RETENTION_MARGIN = timedelta(seconds=1)


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
# the encrypted secrets a finished call still holds (none). Events written before keep
# the hash of their version, checked as such.
CONTENT_VERSION = 3


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
        "content_version": CONTENT_VERSION,
        "content_hash": execution_content_hash(execution),
        # What the call carries, recorded by every event: an open call must still carry
        # what its admission event recorded (the worker refuses it otherwise).
        "input_sha256": arguments_digest(execution.input_data),
        "sealed_sha256": sealed_digest(execution.sealed_secrets),
        # Outside the hash: set to null, legitimately, when the user or role is
        # deleted; otherwise they must still be these (``altered_executions``).
        "principal_id": execution.principal_id,
        "role_id": execution.role_id,
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


def _with_events(ordered, chunk: int):
    """``ordered`` (a queryset by primary key) in chunks, each with the audit events of
    each of its rows, oldest first: ``(rows, {target id: [(sequence, after), ...]})``."""
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
            .values_list("target_id", "sequence", "after")
        )
        recorded: dict[str, list[tuple[int | None, dict]]] = {}
        # A plain query, not .iterator(): on PostgreSQL that is a cursor, planned for its
        # first rows, which walked the whole event table in id order for every chunk.
        for target_id, sequence, after in events:
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
    held_from = newest_cut + _RETENTION_MARGIN if newest_cut is not None else None
    for rows, recorded in _with_events(Execution.objects.order_by("pk"), chunk):
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
                    )
                continue
            problem = (
                _finished_record_problem(execution, *history[-1])
                or _admission_problem(execution, history)
                or _approval_problem(execution, history, approved)
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
        )
    if after.get("status") not in TERMINAL_STATUSES or not after.get("content_hash"):
        return None
    moved = [
        name
        for name in ("principal_id", "role_id")
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
        )
    if _arguments_altered(execution):
        return Problem(
            "record_altered",
            sequence,
            None,
            f"{named}: its stored arguments no longer match their hash: they were "
            "altered after the call was admitted.",
        )
    return None


# What every event of a call records of the call it carries: never different.
_CARRIED = ("input_hash", "input_sha256")


def _admission_problem(execution: Execution, history: list[tuple[int | None, dict]]):
    """A record (open or finished) that no longer carries the call its first event
    recorded, or whose events disagree about that call."""
    from executions.services.integrity import admission_mismatch
    from registry.services.audit_chain import Problem

    first_sequence, first = history[0]
    admitted = _where(first_sequence, "its first event")
    for sequence, after in history[1:]:
        differ = [k for k in _CARRIED if k in after and k in first and after[k] != first[k]]
        if differ:
            return Problem(
                "record_altered",
                sequence,
                None,
                f"{_named(execution)}: {_where(sequence)} recorded another "
                f"{' and '.join(differ)} than {admitted}: the call's arguments were altered "
                "after it was admitted.",
            )
    changed = admission_mismatch(execution, first)
    if changed:
        return Problem(
            "record_altered",
            first_sequence,
            None,
            f"{_named(execution)} ({execution.status}): its {' and '.join(changed)} no longer "
            f"match what {admitted} recorded: the call was altered after it was admitted.",
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


def deleted_executions(chunk: int = 2000):
    """Execution records deleted behind the services' back (``audit_verify``): an
    execution the audit log has an event of after the latest retention run, but
    no row. Retention removes only calls finished before it runs, and nothing
    else ToolHub does removes a record (its foreign keys protect it or are set to
    null). A call whose events all predate that run may have gone with retention;
    the retention export holds those.

    One pass over the event index in target order, checked in chunks.
    """
    from registry.models import AuditCheckpoint, AuditEvent
    from registry.services.audit_chain import Problem

    events = AuditEvent.objects.filter(target_type="executions.execution")
    last_run = max(AuditCheckpoint.objects.values_list("created_at", flat=True), default=None)
    if last_run is not None:
        events = events.filter(occurred_at__gt=last_run + _RETENTION_MARGIN)
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
            if pk in found:
                continue
            event = events.filter(target_id=target_id).order_by("id").first()
            if event is None:  # its events went while this ran (retention)
                continue
            yield Problem(
                "record_deleted",
                event.sequence,
                event.pk,
                f"Execution {target_id} is in the audit log (event id {event.pk}, "
                f"{event.action}) but its record is gone: it was deleted behind ToolHub's "
                "back (retention removes only calls finished before it runs).",
            )


# What an approval's decision event records, as the row's fields: an edit of any of
# them behind the services' back (who decided, why, the outcome, the arguments it
# was bound to) makes the row disagree with its latest event.
_APPROVAL_FIELDS = {
    "status": "status",
    "decided_by": "decided_by_name",
    "reason": "reason",
    "input_hash": "input_hash",
    "execution_id": "execution_id",
    "decided_at": "decided_at",
}


def _approval_form(value) -> str:
    """A field of an approval as its event records it (times as ``time_form``)."""
    return time_form(value) if isinstance(value, datetime) else str(value or "")


def altered_approvals(chunk: int = 2000):
    """Approvals that no longer say what their latest audit event recorded, or that no
    longer bind the arguments of their call (``audit_verify``).

    Every decision and every close (approved, rejected, expired, cancelled) writes
    an event with the approval's state; a pending approval has none yet, but its
    ``input_hash`` must still be its call's (a changed hash would let a person
    approve other arguments than the call carries).
    """
    from registry.services.audit_chain import Problem

    ordered = Approval.objects.select_related("execution").order_by("pk")
    for rows, recorded in _with_events(ordered, chunk):
        for approval in rows:
            named = f"Approval {approval.pk} of execution {approval.execution_id}"
            if approval.input_hash != approval.execution.input_hash:
                yield Problem(
                    "record_altered",
                    None,
                    None,
                    f"{named} is bound to other arguments than its call carries: its "
                    "input_hash was altered.",
                )
                continue
            sequence, after = recorded.get(str(approval.pk), [(None, None)])[-1]
            if after is None:
                if approval.status != ApprovalStatus.PENDING:
                    yield Problem(
                        "record_unaudited",
                        None,
                        None,
                        f"{named} is {approval.status} but no event records its decision: "
                        "it was decided behind ToolHub's back.",
                    )
                continue
            changed = [
                key
                for key, field in _APPROVAL_FIELDS.items()
                if key in after
                and _approval_form(getattr(approval, field)) != str(after[key] or "")
            ]
            if changed:
                where = f"event #{sequence}" if sequence else "its latest event (not sealed yet)"
                yield Problem(
                    "record_altered",
                    sequence,
                    None,
                    f"{named} no longer matches {where} ({', '.join(changed)} changed): "
                    "the record was altered after it was decided.",
                )
