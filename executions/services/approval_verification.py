"""What ``audit_verify`` checks of approvals: each row against its authentic events.

An approval's request (``approval.requested``, written with the call's admission)
records why the call waits, the condition it matched, when it was asked and
when it expires; each decision or close records the outcome, who decided (name
and id), when and why. A row that no longer says what those events recorded was
edited behind the services' back.
"""

from __future__ import annotations

from datetime import datetime

from executions.models import Approval, ApprovalStatus
from executions.services.verification import with_events
from registry.canonical import canonical_json, stored_form, time_form

_APPROVAL = Approval._meta.label_lower

# What an approval's events record, as the row's fields. Fixed when the call is
# admitted: compared with the first event (the request) as well as the latest.
_FIXED_FIELDS = {
    "input_hash": "input_hash",
    "execution_id": "execution_id",
    "required_because": "required_because",
    "condition_matched": "condition_matched",
    "requested_at": "requested_at",
    "expires_at": "expires_at",
}
# Set by the decision: compared with the latest event.
_APPROVAL_FIELDS = {
    **_FIXED_FIELDS,
    "status": "status",
    "decided_by": "decided_by_name",
    "decided_by_id": "decided_by_id",
    "reason": "reason",
    "decided_at": "decided_at",
}
# Deleting the user who decided clears it (SET_NULL; the name stays).
_CLEARABLE = frozenset({"decided_by_id"})


def _approval_form(value) -> str:
    """A field of an approval as its event records it (times as ``time_form``, JSON
    canonical), so the row and the event compare alike."""
    if isinstance(value, datetime):
        return time_form(value)
    if isinstance(value, dict | list):
        return canonical_json(stored_form(value))
    return str(value if value is not None else "")


def _changed(approval: Approval, after: dict, fields: dict) -> list[str]:
    changed = []
    for key, field in fields.items():
        if key not in after:
            continue  # an event from before this field was recorded
        value = getattr(approval, field)
        if field in _CLEARABLE and value is None:
            continue
        if _approval_form(value) != _approval_form(after[key] or None):
            changed.append(key)
    return changed


def _altered(named: str, approval: Approval, sequence, changed: list[str]):
    from registry.services.audit_chain import Problem

    where = f"event #{sequence}" if sequence else "its event (not sealed yet)"
    return Problem(
        "record_altered",
        sequence,
        None,
        f"{named} no longer matches {where} ({', '.join(changed)} changed): "
        "the record was altered after it was written.",
        target_type=_APPROVAL,
        target_id=str(approval.pk),
    )


def _approval_problem(approval: Approval, history):
    from registry.services.audit_chain import Problem

    named = f"Approval {approval.pk} of execution {approval.execution_id}"
    if approval.input_hash != approval.execution.input_hash:
        return Problem(
            "record_altered",
            None,
            None,
            f"{named} is bound to other arguments than its call carries: its "
            "input_hash was altered.",
            target_type=_APPROVAL,
            target_id=str(approval.pk),
        )
    if not history:
        if approval.status == ApprovalStatus.PENDING:
            return None
        return Problem(
            "record_unaudited",
            None,
            None,
            f"{named} is {approval.status} but no event records its decision: "
            "it was decided behind ToolHub's back.",
            target_type=_APPROVAL,
            target_id=str(approval.pk),
        )
    first_sequence, first = history[0]
    changed = _changed(approval, first, _FIXED_FIELDS)
    if changed:
        return _altered(named, approval, first_sequence, changed)
    sequence, after = history[-1]
    changed = _changed(approval, after, _APPROVAL_FIELDS)
    return _altered(named, approval, sequence, changed) if changed else None


def altered_approvals(chunk: int = 2000):
    """Approvals that no longer say what their authentic audit events recorded, or that
    no longer bind the arguments of their call (``audit_verify``).

    Every approval is recorded when it is asked for (``approval.requested``; not
    the approvals from before that event existed) and every decision and close
    (approved, rejected, expired, cancelled) writes an event with its state. Its
    ``input_hash`` must still be its call's (a changed hash would let a person
    approve other arguments than the call carries).
    """
    ordered = Approval.objects.select_related("execution").order_by("pk")
    for rows, recorded in with_events(ordered, chunk):
        for approval in rows:
            problem = _approval_problem(approval, recorded.get(str(approval.pk)))
            if problem is not None:
                yield problem
