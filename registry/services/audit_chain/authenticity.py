"""Whether an event was written by ToolHub: its MAC and its unique identity."""

from __future__ import annotations

from django.db.models import F

from registry.models import AuditChainHead, AuditEvent
from registry.services.audit_auth import mac_valid, seal_valid
from registry.services.audit_chain.report import Problem


def _authentic(row: dict, *, chain_authenticated: bool, chain_identified: bool = False) -> bool:
    """An event with a MAC that verifies, or one without while the chain has none yet
    (events from before MACs existed); once the chain holds an identified event
    (MAC version 2), only identified ones."""
    if row.get("uid") is None and chain_identified:
        return False
    if row.get("mac"):
        return mac_valid(row)
    return not chain_authenticated


def _uids_taken(rows: list[dict]) -> dict:
    """For each ``uid`` of ``rows``, the id of the first row holding it (sealed rows
    first): the unique constraint makes a second one impossible unless it was dropped."""
    uids = [row["uid"] for row in rows if row["uid"] is not None]
    holders = (
        AuditEvent.objects.filter(uid__in=uids)
        .order_by(F("sequence").asc(nulls_last=True), "id")
        .values_list("uid", "id")
    )
    taken: dict = {}
    for uid, event_id in holders:
        taken.setdefault(uid, event_id)
    return taken


def _first_with_uid(row: dict, taken: dict) -> bool:
    """Not a copy: no other event (sealed, or before it) holds its identity."""
    return row["uid"] is None or taken.get(row["uid"], row["id"]) == row["id"]


def _chain_state_at(sequence: int) -> tuple[bool, bool]:
    """(authenticated, identified): whether the chain already held an event with a MAC,
    and one with an identity, at ``sequence`` (a walk from a checkpoint starts there)."""
    if sequence == 0:
        return False, False
    head = AuditChainHead.objects.filter(pk=1).first()
    if head is None:
        return False, False
    return (
        head.authenticated_since is not None and head.authenticated_since <= sequence,
        head.identified_since is not None and head.identified_since <= sequence,
    )


def _not_authentic(row: dict, authenticated: bool, identified: bool = False) -> Problem | None:
    """Why a sealed event whose hash fits is still not what ToolHub wrote, if it is not."""
    sequence, event_id = row["sequence"], row["id"]
    named = f"Event #{sequence} (id {event_id}, {row['action']})"
    if row["mac"] and not mac_valid(row):
        return Problem(
            "altered",
            sequence,
            event_id,
            f"{named} does not match its authentication code: it was altered (and the "
            "chain recomputed after it), or the key that signed it is no longer in "
            "TOOLHUB_AUDIT_SIGNING_KEY.",
        )
    if not row["mac"] and authenticated:
        return Problem(
            "forged",
            sequence,
            event_id,
            f"{named} has no authentication code although the events before it have: it "
            "was written and chained behind ToolHub's back.",
        )
    if row["uid"] is None and identified:
        return Problem(
            "forged",
            sequence,
            event_id,
            f"{named} has no identity (uid) although the events before it have: it was "
            "written and chained behind ToolHub's back (a copy of an older event?).",
        )
    if (row["uid"] is not None or row["seal_mac"]) and not seal_valid(
        sequence, row["hash"], row["seal_mac"]
    ):
        return Problem(
            "altered",
            sequence,
            event_id,
            f"{named} does not match its seal: the chain was recomputed after it was "
            "sealed (an event before it deleted, inserted or altered), or the key that "
            "sealed it is no longer in TOOLHUB_AUDIT_SIGNING_KEY.",
        )
    if row["mac"] and row["actor_id"] is not None and row["actor_id"] != row["actor_ref"]:
        return Problem(
            "altered",
            sequence,
            event_id,
            f"{named} now points at another user (actor_id {row['actor_id']}) than the "
            f"one it recorded ({row['actor_ref']}).",
        )
    return None
