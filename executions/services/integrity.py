"""An open call stays bound to what its admission event recorded.

Every execution event records what the call carries: ``input_hash`` (the
column approvals and the result cache use), ``input_sha256`` (its stored
arguments, in the form they read back) and ``sealed_sha256`` (its encrypted
secrets). Those never change while a call waits or runs, so a row whose
arguments no longer match its admission event was rewritten in the database:
the worker refuses to run it (``integrity_error``) and ``audit_verify`` names
it. The event itself is authenticated (its MAC) and chained, so it cannot be
rewritten to match.
"""

from __future__ import annotations

import itertools

from django.core.files.storage import default_storage

from executions.models import Execution, ExecutionStatus
from executions.services import outputs
from executions.services.admitted import admitted_changes, recorded_admission
from executions.services.execution_audit import (
    arguments_digest,
    input_hash,
    round_trips,
    sealed_digest,
)
from executions.services.run_evidence import run_permitted

INTEGRITY_ERROR = "integrity_error"
_EXECUTION = "executions.execution"
# Refusals keep the arguments as received: only an admitted call's stored arguments
# are exactly what its input_hash was computed from.
_REFUSED = (ExecutionStatus.DENIED, ExecutionStatus.INVALID)


def admission_mismatch(execution: Execution, recorded: dict) -> list[str]:
    """The columns of ``execution`` that no longer say what ``recorded`` (the ``after``
    of its admission event) recorded; empty when it still carries the same call: its
    arguments and secrets, and every admitted field (``admitted.ADMITTED_FIELDS``)."""
    changed = []
    if "input_hash" in recorded and execution.input_hash != (recorded["input_hash"] or ""):
        changed.append("input_hash")
    if _arguments_differ(execution, recorded):
        changed.append("input_data")
    if (
        not execution.is_terminal  # a finished call's secrets are wiped (its content hash)
        and "sealed_sha256" in recorded
        and sealed_digest(execution.sealed_secrets) != recorded["sealed_sha256"]
    ):
        changed.append("sealed_secrets")
    return changed + admitted_changes(execution, recorded_admission(recorded))


def _arguments_differ(execution: Execution, recorded: dict) -> bool:
    if (
        "input_sha256" in recorded
        and arguments_digest(execution.input_data) != (recorded["input_sha256"])
    ):
        return True
    # The exact hash also tells 10 from "10" (the stored form does not), where the
    # arguments read back exactly as they were hashed.
    data = execution.input_data
    return (
        execution.status not in _REFUSED
        and isinstance(data, dict)
        and bool(recorded.get("input_hash"))
        and round_trips(data)
        and input_hash(data) != recorded["input_hash"]
    )


def authentic_afters(execution_id):
    """What each authentic event of the call recorded (its ``after``), oldest first:
    one indexed read, each MAC checked only when it is reached."""
    from registry.models import AuditEvent
    from registry.services.audit_auth import MAC_FIELDS, signing_keys

    events = (
        AuditEvent.objects.filter(target_type=_EXECUTION, target_id=str(execution_id))
        .order_by("id")
        .values("id", "mac", *MAC_FIELDS)
    )
    keyed = bool(signing_keys())
    for row in events:
        if _mac_holds(row, keyed):  # a row inserted behind ToolHub's back never binds
            yield row["after"] or {}


def admission_record(execution_id) -> dict | None:
    """What the first authentic event of the call recorded (its admission, unless
    retention removed that one); None when there is none."""
    return next(authentic_afters(execution_id), None)


def _mac_holds(row: dict, keyed: bool) -> bool:
    from registry.services.audit_auth import mac_valid

    return not keyed or mac_valid(row)


def authentic_events(event_ids: list[int]) -> set[int]:
    """Those of the unsealed audit events ``event_ids`` (not refused by the sealer) whose
    MAC verifies: written by ToolHub. (A sealed event's MAC the chain walk checks.)"""
    from registry.models import AuditEvent
    from registry.services.audit_auth import MAC_FIELDS, signing_keys

    if not event_ids:
        return set()
    keyed = bool(signing_keys())
    rows = AuditEvent.objects.filter(pk__in=event_ids).values("id", "mac", *MAC_FIELDS)
    return {row["id"] for row in rows if _mac_holds(row, keyed)}


def claim_refusal(execution: Execution) -> str | None:
    """Why a worker must not run ``execution`` as read (None: it carries what was
    admitted, and its admission or a person's approval let it run)."""
    events = authentic_afters(execution.pk)
    recorded = next(events, None)
    if recorded is None:
        return (
            "The call has no authentic admission event to check its arguments against; "
            "it was not run."
        )
    changed = admission_mismatch(execution, recorded)
    if changed:
        return (
            f"The call's {' and '.join(changed)} no longer match what its admission event "
            "recorded: it was altered in the database after it was admitted, and was not run."
        )
    if not run_permitted(itertools.chain([recorded], events)):
        return (
            "No authentic event lets the call run: its admission did not queue it and no "
            "approval of it is recorded. It was queued in the database, and was not run."
        )
    return None


def altered_artifacts(chunk: int = 500):
    """Finished calls whose output artifact is gone or no longer has the digest the
    record holds (``output_data.sha256``, covered by the record's content hash)."""
    from registry.services.audit_chain import Problem

    rows = (
        Execution.objects.exclude(output_artifact="")
        .order_by("pk")
        .values_list("pk", "output_artifact", "output_data")
    )
    for pk, name, output in rows.iterator(chunk_size=chunk):
        recorded = (output or {}).get("sha256") if isinstance(output, dict) else None
        if not recorded:
            continue
        problem = _artifact_problem(name, recorded)
        if problem:
            yield Problem(
                "record_altered",
                None,
                None,
                f"Execution {pk}: its output artifact {name} {problem}.",
                target_type=_EXECUTION,
                target_id=str(pk),
            )


def _artifact_problem(name: str, recorded: str) -> str | None:
    try:
        handle = default_storage.open(name, "rb")
    except (FileNotFoundError, OSError):
        return "is gone (deleted behind ToolHub's back)"
    with handle:
        digest = outputs.sha256_of(handle)
    if digest != recorded:
        return "no longer matches the digest recorded with the call: it was altered or replaced"
    return None
