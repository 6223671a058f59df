"""Retention checkpoints: authenticated, chained, and checked against their export.

A checkpoint says "events up to #N were removed on purpose, the last one had
this hash, and they are in this export"; verification starts there. A row
anyone with write access could insert would erase history, so each
checkpoint carries a MAC under ``TOOLHUB_AUDIT_SIGNING_KEY`` (which the
database does not hold) of its fields, the export file's SHA-256 and the
checkpoints before it: one inserted, altered or removed behind ToolHub's
back no longer fits. Checkpoints written before they were authenticated
(no MAC) are accepted when ToolHub vouched for them another way: the
authenticated ``audit.retention`` event written with them, or a later
authenticated checkpoint that covers them.

The export holds the removed events; where it is reachable its hash is
checked, and where it is not, verification says so (a warning) rather than
pass as if it had been.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from registry.canonical import canonical_json, time_form
from registry.models import AuditCheckpoint, AuditEvent
from registry.services.audit_auth import MAC_FIELDS, content_mac, content_mac_valid, mac_valid


def _history(earlier: list[AuditCheckpoint]) -> str:
    """One digest of the checkpoints before one: what chains it to them."""
    rows = [[cp.sequence, cp.hash, cp.mac] for cp in earlier]
    return hashlib.sha256(canonical_json(rows).encode()).hexdigest()


def _content(checkpoint: AuditCheckpoint, earlier: list[AuditCheckpoint]) -> bytes:
    content = {
        "kind": "audit_checkpoint",
        "sequence": checkpoint.sequence,
        "hash": checkpoint.hash,
        "removed_before": time_form(checkpoint.removed_before),
        "events_removed": checkpoint.events_removed,
        "executions_removed": checkpoint.executions_removed,
        "export_path": checkpoint.export_path,
        "export_sha256": checkpoint.export_sha256,
        "earlier": _history(earlier),
    }
    return canonical_json(content).encode()


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checkpoint_record(**fields) -> AuditCheckpoint:
    """Write the next checkpoint (``AuditCheckpoint`` fields), authenticated and chained
    to the ones before it. Inside the retention transaction."""
    earlier = list(AuditCheckpoint.objects.order_by("sequence"))
    checkpoint = AuditCheckpoint(**fields)
    checkpoint.mac = content_mac(_content(checkpoint, earlier))
    checkpoint.save()
    return checkpoint


def checkpoint_forgery() -> tuple[int, str] | None:
    """(sequence, why) of the first checkpoint ToolHub did not write, if one is there."""
    checkpoints = list(AuditCheckpoint.objects.order_by("sequence"))
    vouched: set[int] = set()  # legacy checkpoints a later authenticated one covers
    for index in range(len(checkpoints) - 1, -1, -1):
        checkpoint = checkpoints[index]
        if not checkpoint.mac:
            continue
        if not content_mac_valid(_content(checkpoint, checkpoints[:index]), checkpoint.mac):
            return checkpoint.sequence, (
                f"Checkpoint #{checkpoint.sequence} does not match its authentication code: it "
                "was altered or written behind ToolHub's back, or a checkpoint before it was "
                "removed or inserted (or the key that signed it is no longer in "
                "TOOLHUB_AUDIT_SIGNING_KEY). Events it claims were removed by retention may "
                "have been deleted."
            )
        vouched.update(cp.sequence for cp in checkpoints[:index])
    for checkpoint in checkpoints:
        if not checkpoint.mac and checkpoint.sequence not in vouched:
            if not _retention_event_names(checkpoint):
                return checkpoint.sequence, (
                    f"Checkpoint #{checkpoint.sequence} has no authentication code and no "
                    "authenticated audit.retention event names it: it was written behind "
                    "ToolHub's back, and the events it claims were removed by retention may "
                    "have been deleted."
                )
    return None


def _retention_event_names(checkpoint: AuditCheckpoint) -> bool:
    """Whether an authentic ``audit.retention`` event records this checkpoint."""
    events = AuditEvent.objects.filter(
        action="audit.retention", target_id=str(checkpoint.pk)
    ).values("mac", *MAC_FIELDS)
    for row in events:
        after = row["after"] if isinstance(row["after"], dict) else {}
        if (
            after.get("checkpoint_sequence") == checkpoint.sequence
            and after.get("checkpoint_hash") == checkpoint.hash
            and after.get("export") == checkpoint.export_path
            and after.get("events_removed") == checkpoint.events_removed
            and mac_valid(row)
        ):
            return True
    return False


def export_findings() -> Iterator[tuple[bool, int, str]]:
    """(altered, sequence, message) for each checkpoint whose export is altered (True) or
    cannot be reached from here (False)."""
    for checkpoint in AuditCheckpoint.objects.order_by("sequence"):
        state = export_state(checkpoint)
        if state == "altered":
            yield (
                True,
                checkpoint.sequence,
                (
                    f"The export of checkpoint #{checkpoint.sequence} ({checkpoint.export_path}) "
                    "was altered: it no longer matches the hash the checkpoint recorded."
                ),
            )
        elif state == "unreachable":
            yield (
                False,
                checkpoint.sequence,
                (
                    f"The export of checkpoint #{checkpoint.sequence} ({checkpoint.export_path}) "
                    f"cannot be read here: the {checkpoint.events_removed} event(s) removed up to "
                    f"#{checkpoint.sequence} were not checked against it."
                ),
            )


def export_state(checkpoint: AuditCheckpoint) -> str:
    """ "intact", "altered" or "unreachable". Without a recorded hash (a checkpoint from
    before exports were hashed), the export's closing head line must name the checkpoint."""
    path = Path(checkpoint.export_path)
    try:
        if checkpoint.export_sha256:
            intact = file_sha256(path) == checkpoint.export_sha256
        else:
            closing = _last_line(path)
            intact = (closing.get("sequence"), closing.get("hash")) == (
                checkpoint.sequence,
                checkpoint.hash,
            )
    except OSError:
        return "unreachable"
    return "intact" if intact else "altered"


def _last_line(path: Path) -> dict:
    last = ""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            last = line if line.strip() else last
    try:
        closing = json.loads(last)
    except ValueError:
        return {}
    return closing if isinstance(closing, dict) else {}


def exported_hash(checkpoint: AuditCheckpoint, sequence: int) -> str | None:
    """The hash the export of ``checkpoint`` holds for event #``sequence`` (None: not there,
    or the export cannot be read)."""
    try:
        with Path(checkpoint.export_path).open(encoding="utf-8") as lines:
            for line in lines:
                row = json.loads(line)
                if row.get("type") == "audit_event" and row.get("sequence") == sequence:
                    return row.get("hash")
    except (OSError, ValueError):
        return None
    return None
