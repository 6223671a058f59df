"""Walking the chain from a known point, recomputing every hash."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from registry.models import AuditEvent
from registry.services.audit_chain.authenticity import _chain_state_at, _not_authentic
from registry.services.audit_chain.hashing import AUTH_FIELDS, CONTENT_FIELDS, GENESIS, event_hash
from registry.services.audit_chain.report import Problem


def _rows_from(sequence: int, chunk: int = 5000, *, until: int | None = None) -> Iterator[dict]:
    qs = AuditEvent.objects.filter(sequence__gt=sequence)
    if until is not None:
        qs = qs.filter(sequence__lte=until)
    qs = qs.order_by("sequence").values(
        "sequence", "prev_hash", "hash", *CONTENT_FIELDS, *AUTH_FIELDS
    )
    return qs.iterator(chunk_size=chunk)


@dataclass
class Walk:
    """Where a walk of the chain stopped: after the last event that fits, or at a problem."""

    problem: Problem | None = None
    checked: int = 0
    last_sequence: int = 0
    last_hash: str = GENESIS


def walk_chain(start_sequence: int, start_hash: str, *, until: int | None = None) -> Walk:
    """Recompute the chain after ``start_sequence`` (whose hash is ``start_hash``).

    Reads the events in sequence order, in chunks (constant memory), up to
    ``until`` or the last sealed event, and stops at the first one that was
    altered, deleted, inserted or moved.
    """
    walk = Walk(last_sequence=start_sequence, last_hash=start_hash)
    expected_prev, expected_sequence = start_hash, start_sequence + 1
    # Once an event carries a MAC (an identity), every later one must.
    authenticated, identified = _chain_state_at(start_sequence)
    for row in _rows_from(start_sequence, until=until):
        sequence = row["sequence"]
        if sequence != expected_sequence:
            walk.problem = Problem(
                "missing",
                expected_sequence,
                None,
                f"Event #{expected_sequence} is missing (the chain jumps to #{sequence}, event id "
                f"{row['id']}): events were deleted or renumbered.",
            )
            break
        if row["prev_hash"] != expected_prev:
            walk.problem = Problem(
                "broken_link",
                sequence,
                row["id"],
                f"Event #{sequence} (id {row['id']}) does not follow event #{sequence - 1}: an "
                "event before it was deleted, inserted or moved.",
            )
            break
        recomputed = event_hash(expected_prev, row, sequence)
        if recomputed != row["hash"]:
            walk.problem = Problem(
                "altered",
                sequence,
                row["id"],
                f"Event #{sequence} (id {row['id']}, {row['action']}) was altered: its content no "
                "longer matches its hash.",
            )
            break
        walk.problem = _not_authentic(row, authenticated, identified)
        if walk.problem is not None:
            break
        authenticated = authenticated or bool(row["mac"])
        identified = identified or row["uid"] is not None
        expected_prev = row["hash"]
        expected_sequence += 1
        walk.checked += 1
    walk.last_sequence, walk.last_hash = expected_sequence - 1, expected_prev
    return walk
