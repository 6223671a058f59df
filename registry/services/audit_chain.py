"""The audit log's hash chain: sealing, verification, and a signed head to anchor outside.

Events are written without a hash (so writers never wait on each other) and
a sealer appends them to the chain in id order, in batches: each sealed event
gets the next ``sequence``, the previous event's hash as ``prev_hash``, and
``hash = sha256(prev_hash + "|" + canonical JSON of its content)``. The sealer
runs every few seconds (beat) and in-process after each commit in the
embedded mode. ``audit_verify`` recomputes the chain from the start or from
the latest retention checkpoint and names the first event that does not fit;
``audit_head_check`` runs the same walk up to a signed head kept outside.

Events carry a MAC made when they are written (``audit_auth``); an
authenticated event's hash also covers its MAC and ``actor_ref``. The sealer
refuses an event whose MAC does not verify, or that has none once the chain
holds authenticated events: such a row was written behind ToolHub's back. It
marks it (``sealed_at`` set, no ``sequence``), never seals it, and
``audit_verify`` names it. It also MACs each event's sequence and hash
(``seal_mac``): the hashes alone can be recomputed after an event is deleted.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Count, F
from django.utils import timezone

from registry.canonical import canonical_json, time_form
from registry.models import AuditChainHead, AuditCheckpoint, AuditEvent
from registry.services.audit_auth import mac_valid, seal_mac, seal_valid
from registry.services.audit_checkpoint import (
    checkpoint_forgery,
    export_findings,
)

logger = logging.getLogger(__name__)
GENESIS = "0" * 64
SEAL_GRACE = timedelta(seconds=1)
CONTENT_FIELDS = (
    "id",
    "occurred_at",
    "actor_name",
    "action",
    "target_type",
    "target_id",
    "target_repr",
    "before",
    "after",
    "request_id",
    "client_address",
)


# What the walk and the sealer read of each event besides its content.
AUTH_FIELDS = ("mac", "actor_ref", "actor_id", "uid", "seal_mac")


def canonical_content(row: dict, sequence: int) -> str:
    content = {name: row[name] for name in CONTENT_FIELDS}
    content["occurred_at"] = time_form(row["occurred_at"])
    content["sequence"] = sequence
    if row.get("mac"):  # an authenticated event: its MAC and actor id are chained too
        content["mac"] = row["mac"]
        content["actor_ref"] = row.get("actor_ref")
    if row.get("uid") is not None:  # an identified event (MAC version 2): its identity too
        content["uid"] = str(row["uid"])
    return canonical_json(content)


def event_hash(prev_hash: str, row: dict, sequence: int) -> str:
    digest = hashlib.sha256()
    digest.update(prev_hash.encode())
    digest.update(b"|")
    digest.update(canonical_content(row, sequence).encode())
    return digest.hexdigest()


def _seal_batch(*, batch: int, grace: timedelta, now=None) -> tuple[int, int]:
    """(sealed, refused) of one batch."""
    now = now or timezone.now()
    with transaction.atomic():
        head, _ = AuditChainHead.objects.select_for_update().get_or_create(
            pk=1, defaults={"sequence": 0, "hash": GENESIS}
        )
        rows = list(
            AuditEvent.objects.filter(
                sequence__isnull=True, sealed_at__isnull=True, occurred_at__lte=now - grace
            )
            .order_by("id")
            .values(*CONTENT_FIELDS, *AUTH_FIELDS)[:batch]
        )
        if not rows:
            return 0, 0
        sequence, prev = head.sequence, head.hash or GENESIS
        authenticated_since, identified_since = head.authenticated_since, head.identified_since
        taken = _uids_taken(rows)
        updates, refused = [], []
        for row in rows:
            if not _authentic(
                row,
                chain_authenticated=authenticated_since is not None,
                chain_identified=identified_since is not None,
            ) or not _first_with_uid(row, taken):
                refused.append((now, row["id"]))
                continue
            sequence += 1
            if row["mac"] and authenticated_since is None:
                authenticated_since = sequence
            if row["uid"] is not None and identified_since is None:
                identified_since = sequence
            digest = event_hash(prev, row, sequence)
            updates.append((sequence, prev, digest, seal_mac(sequence, digest), now, row["id"]))
            prev = digest
        table = AuditEvent._meta.db_table
        with connection.cursor() as cursor:
            # Raw UPDATE: the model refuses updates on purpose; sealing is the one exception,
            # and the PostgreSQL trigger only lets it fill the chain columns of unsealed rows.
            if updates:
                cursor.executemany(
                    f"UPDATE {table} SET sequence = %s, prev_hash = %s, hash = %s, "  # noqa: S608
                    "seal_mac = %s, sealed_at = %s WHERE id = %s AND sequence IS NULL",
                    updates,
                )
            if refused:
                # Marked as looked at (sealed_at without a sequence): never sealed, named
                # by audit_verify, and not read again by the next batch.
                cursor.executemany(
                    f"UPDATE {table} SET sealed_at = %s WHERE id = %s AND sequence IS NULL",  # noqa: S608
                    refused,
                )
                logger.error(
                    "audit sealer: refused %d event(s) that are not authentic (ids %s): they "
                    "were written behind ToolHub's back",
                    len(refused),
                    ", ".join(str(event_id) for _, event_id in refused[:20]),
                )
        AuditChainHead.objects.filter(pk=1).update(
            sequence=sequence,
            hash=prev,
            authenticated_since=authenticated_since,
            identified_since=identified_since,
        )
    return len(updates), len(refused)


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


def audit_seal_all(*, batch: int = 5000, grace: timedelta = SEAL_GRACE, now=None) -> int:
    total = 0
    while True:
        sealed, refused = _seal_batch(batch=batch, grace=grace, now=now)
        total += sealed
        if sealed == 0 and refused == 0:
            return total


@dataclass
class Problem:
    # altered | broken_link | missing | unsealed | forged | forged_checkpoint
    # | export_altered | record_altered
    # | record_deleted | record_unaudited
    kind: str
    sequence: int | None
    event_id: int | None
    message: str


@dataclass
class VerifyReport:
    ok: bool = True
    checked: int = 0
    started_at_sequence: int = 0
    head_sequence: int = 0
    head_hash: str = GENESIS
    checkpoint: int | None = None
    problem: Problem | None = None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        data = asdict(self)
        return data


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


def unsealed_forgeries() -> Iterator[Problem]:
    """Events the sealer refused, and unsealed ones it will refuse: not written by ToolHub."""
    head = AuditChainHead.objects.filter(pk=1).first()
    chain_authenticated = head is not None and head.authenticated_since is not None
    pending = (
        AuditEvent.objects.filter(sequence__isnull=True)
        .order_by("id")
        .values("sealed_at", *CONTENT_FIELDS, *AUTH_FIELDS)
    )
    chain_identified = head is not None and head.identified_since is not None
    for row in pending.iterator(chunk_size=1000):
        refused = row["sealed_at"] is not None
        if refused or not _authentic(
            row, chain_authenticated=chain_authenticated, chain_identified=chain_identified
        ):
            yield Problem(
                "forged",
                None,
                row["id"],
                f"Event id {row['id']} ({row['action']}, {time_form(row['occurred_at'])}) is not "
                "authentic: its authentication code is missing or wrong, so it was written "
                "behind ToolHub's back"
                + (" and the sealer refused it." if refused else " and will not be sealed."),
            )


def duplicate_identities() -> Iterator[Problem]:
    """Events that share their identity (``uid``) with an earlier one: copies. The unique
    constraint refuses them; this finds them where it was dropped (one grouped scan)."""
    shared = (
        AuditEvent.objects.filter(uid__isnull=False)
        .order_by()
        .values("uid")
        .annotate(holders=Count("id"))
        .filter(holders__gt=1)
        .values_list("uid", flat=True)
    )
    for uid in shared.iterator(chunk_size=100):
        rows = list(
            AuditEvent.objects.filter(uid=uid)
            .order_by(F("sequence").asc(nulls_last=True), "id")
            .values("id", "sequence", "action")
        )
        original, copy = rows[0], rows[1]
        where = f"#{copy['sequence']} " if copy["sequence"] is not None else ""
        yield Problem(
            "forged",
            copy["sequence"],
            copy["id"],
            f"Event {where}(id {copy['id']}, {copy['action']}) is a copy of event id "
            f"{original['id']} (the same uid {uid}): it was written behind ToolHub's back.",
        )


# Records whose audit events carry a hash of their content (executions: their
# ``content_hash``). The chain proves the events were not altered; these checks
# prove the records still say what their latest event recorded. Apps register
# theirs when ready (``registry`` never imports them).
_record_checks: list[Callable[[], Iterator[Problem]]] = []


def record_check_register(check: Callable[[], Iterator[Problem]]) -> None:
    """Install ``check() -> problems`` (records that no longer match their events)."""
    if check not in _record_checks:
        _record_checks.append(check)


def _checkpoint_problem(report: VerifyReport) -> Problem | None:
    """A checkpoint ToolHub did not write, or an altered export; an export that cannot be
    read here is a warning (the removed events were not checked)."""
    forged = checkpoint_forgery()
    if forged is not None:
        return Problem("forged_checkpoint", forged[0], None, forged[1])
    for altered, sequence, message in export_findings():
        if altered:
            return Problem("export_altered", sequence, None, message)
        report.warnings.append(message)
    return None


def audit_verify(*, from_checkpoint: bool = True) -> VerifyReport:
    """Recompute the chain and name the first event that was altered, deleted, inserted or moved."""
    report = VerifyReport()
    report.problem = _checkpoint_problem(report)
    if report.problem is not None:
        report.ok = False
        return report
    _walk_into(report, from_checkpoint)
    report.problem = report.problem or _head_problem(report)
    stale = AuditEvent.objects.filter(
        sequence__isnull=True, occurred_at__lt=timezone.now() - timedelta(minutes=5)
    ).count()
    if stale:
        report.warnings.append(
            f"{stale} event(s) older than five minutes are not sealed yet: is the sealer running?"
        )
    report.problem = report.problem or _first_other_problem()
    report.ok = report.problem is None
    return report


def _walk_into(report: VerifyReport, from_checkpoint: bool) -> None:
    """Walk the chain from the latest checkpoint (or the start) and note what it found."""
    start_sequence, expected_prev = 0, GENESIS
    checkpoint = AuditCheckpoint.objects.order_by("-sequence").first() if from_checkpoint else None
    if checkpoint is not None:
        start_sequence, expected_prev = checkpoint.sequence, checkpoint.hash
        report.checkpoint = checkpoint.sequence
    report.started_at_sequence = start_sequence
    walk = walk_chain(start_sequence, expected_prev)
    report.problem, report.checked = walk.problem, walk.checked
    report.head_sequence, report.head_hash = walk.last_sequence, walk.last_hash
    problem = report.problem
    if (
        not from_checkpoint
        and problem is not None
        and problem.kind == "missing"
        and problem.sequence == start_sequence + 1
    ):
        removed = AuditCheckpoint.objects.order_by("-sequence").first()
        if removed is not None:
            problem.message += (
                f" Retention removed events up to #{removed.sequence} (checkpoint, export "
                f"{removed.export_path}): verify from the checkpoint (without --from-start) "
                "and check the removed events against that export."
            )


def _head_problem(report: VerifyReport) -> Problem | None:
    """The chain ends before the sealed head: its latest events were deleted."""
    head = AuditChainHead.objects.filter(pk=1).first()
    if head is None or head.sequence <= report.head_sequence:
        return None
    return Problem(
        "missing",
        report.head_sequence + 1,
        None,
        f"The chain ends at #{report.head_sequence} but was sealed up to #{head.sequence}: "
        "the latest events were deleted.",
    )


def _first_other_problem() -> Problem | None:
    """Forged rows outside the chain, copied identities, then the apps' record checks."""
    for check in (unsealed_forgeries, duplicate_identities, *_record_checks):
        problem = next(iter(check()), None)
        if problem is not None:
            return problem
    return None
