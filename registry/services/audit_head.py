"""The chain's head, signed so it can be stored outside the database and checked later."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC

from django.utils import timezone

from registry.models import AuditChainHead, AuditCheckpoint, AuditEvent
from registry.services.audit_auth import signing_keys
from registry.services.audit_chain import GENESIS, Walk, walk_chain
from registry.services.audit_checkpoint import (
    checkpoint_forgery,
    export_state,
    exported_hash,
)


def _signature(sequence: int, digest: str, at: str, key: bytes | None = None) -> str:
    key = key if key is not None else (signing_keys() or [b""])[0]
    return hmac.new(key, f"{sequence}:{digest}:{at}".encode(), hashlib.sha256).hexdigest()


def _signed(sequence: int, digest: str, at: str, signature: str) -> bool:
    """Whether one of the signing keys made ``signature`` (keys rotate: all verify)."""
    return any(
        hmac.compare_digest(_signature(sequence, digest, at, key), signature)
        for key in signing_keys()
    )


def audit_head() -> dict:
    head = AuditChainHead.objects.filter(pk=1).first()
    sequence, digest = (head.sequence, head.hash) if head else (0, GENESIS)
    at = timezone.now().astimezone(UTC).isoformat(timespec="seconds")
    return {
        "sequence": sequence,
        "hash": digest,
        "at": at,
        "signature": _signature(sequence, digest, at),
    }


def _first_sequence() -> int | None:
    """The lowest sequence still in the table (retention removes the oldest events)."""
    return (
        AuditEvent.objects.filter(sequence__isnull=False)
        .order_by("sequence")
        .values_list("sequence", flat=True)
        .first()
    )


def audit_head_check(head: dict) -> tuple[bool, str]:
    """Is ``head`` authentic, and is the chain up to it intact?

    After the signature, the chain is recomputed (``walk_chain``, as
    ``audit_verify`` does) from the first event up to the head's sequence, and
    must end in the head's hash: an event before the head that was altered,
    deleted, inserted or moved fails the check and is named.

    The walk starts at a retention checkpoint instead only when every event up
    to that checkpoint is gone, as retention leaves it (it deletes them in the
    transaction that writes the checkpoint); a checkpoint row with events still
    behind it is ignored, so it cannot hide them. The checkpoint's hash needs no
    trust of its own: each event's hash covers its ``prev_hash``, so a walk that
    ends in the signed hash pins it. What the database can no longer show, the
    removed events themselves, is checked against the retention export (when
    it can be read here; the message says so when it cannot). A checkpoint
    ToolHub did not write (``checkpoint_forgery``) fails the check: it could
    otherwise stand in for events deleted behind ToolHub's back.
    """
    parsed = _parse_head(head)
    if isinstance(parsed, str):
        return False, parsed
    sequence, digest = parsed
    if sequence == 0:
        return True, "The head is the empty chain."
    forged = checkpoint_forgery()
    if forged is not None:
        return False, f"The history up to #{sequence} cannot be trusted: {forged[1]}"
    first = _first_sequence()
    removed = AuditCheckpoint.objects.filter(sequence__gte=sequence).order_by("sequence").first()
    if removed is not None and (first is None or first > removed.sequence):
        if removed.sequence == sequence and removed.hash != digest:
            return False, f"Checkpoint #{sequence} has another hash: the history was rewritten."
        return _check_against_export(removed, sequence, digest)
    bound = sequence if first is None else min(sequence, first)
    checkpoint = AuditCheckpoint.objects.filter(sequence__lt=bound).order_by("-sequence").first()
    if checkpoint is None:
        walk = walk_chain(0, GENESIS, until=sequence)
        origin = "from the first event"
    else:
        walk = walk_chain(checkpoint.sequence, checkpoint.hash, until=sequence)
        origin = f"after checkpoint #{checkpoint.sequence}"
    problem = _walk_problem(walk, sequence)
    if problem is not None:
        return False, problem
    if walk.last_hash != digest:
        return False, f"Event #{sequence} now has another hash: the history was rewritten."
    message = (
        f"Event #{sequence} still has this hash, and the {walk.checked} event(s) {origin} "
        "up to it are intact."
    )
    if checkpoint is not None:
        message += f" Events up to #{checkpoint.sequence} were removed by retention: " + (
            f"their export {checkpoint.export_path} is intact."
            if export_state(checkpoint) == "intact"
            else f"their export {checkpoint.export_path} cannot be read here, so they were "
            "not checked against it."
        )
    return True, message


def _parse_head(head: dict) -> tuple[int, str] | str:
    """``(sequence, hash)`` of a head whose signature checks out, else why not."""
    try:
        sequence, digest, at, signature = (
            int(head["sequence"]),
            str(head["hash"]),
            str(head["at"]),
            str(head["signature"]),
        )
    except (KeyError, TypeError, ValueError):
        return "Not a head: it needs sequence, hash, at and signature."
    if not _signed(sequence, digest, at, signature):
        return "The signature does not match: the head was altered or signed with another key."
    return sequence, digest


def _walk_problem(walk: Walk, sequence: int) -> str | None:
    """What is wrong with the chain a walk up to the head's ``sequence`` found."""
    if walk.problem is not None:
        return f"The history up to #{sequence} was rewritten: {walk.problem.message}"
    if walk.last_sequence < sequence:
        if walk.last_sequence + 1 == sequence:
            return f"Event #{sequence} is no longer in the audit log."
        return (
            f"The history up to #{sequence} was cut: events #{walk.last_sequence + 1} to "
            f"#{sequence} are no longer in the audit log."
        )
    return None


def _check_against_export(removed: AuditCheckpoint, sequence: int, digest: str):
    """The head's event was removed by retention: find it in the checkpoint's export."""
    named = f"Event #{sequence} was removed by retention (checkpoint #{removed.sequence}"
    state = export_state(removed)
    if state == "unreachable":
        return True, (
            f"{named}), but its export {removed.export_path} cannot be read here: the head "
            "was not checked against it."
        )
    exported = exported_hash(removed, sequence) if state == "intact" else None
    if state == "altered" or exported != digest:
        return False, (
            f"{named}), and its export {removed.export_path} "
            + ("was altered." if state == "altered" else "does not hold it with this hash.")
        )
    return True, f"{named}); its export {removed.export_path} holds it with this hash."
