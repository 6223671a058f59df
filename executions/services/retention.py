"""Retention: the only way old audit events and executions leave the database.

Events up to a cut point are first exported (JSON Lines, with the chain
fields and a closing line holding the head at the cut), then a checkpoint
records the last removed event's sequence and hash, so verification of what
remains starts there and still passes. Finished executions older than the
cut are exported and removed with them; their approvals go too.

The checkpoint is authenticated and chained (``registry.services.audit_checkpoint``)
and records the export's SHA-256. On PostgreSQL the triggers refuse deletes of
audit events and finished executions to every role but the tables' owner, so
the deletes go through two ``SECURITY DEFINER`` functions the owner installed
(``toolhub_audit_retention``, ``toolhub_execution_retention``): they remove
only what a checkpoint covers (docs/security-audit-chain.md).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from django.db import connection, transaction
from django.utils import timezone

from executions.models import TERMINAL_STATUSES, Approval, Execution
from executions.services.execution_audit import audit_execution_change
from registry.models import AuditCheckpoint, AuditEvent
from registry.services.audit import audit_record
from registry.services.audit_chain import audit_seal_all
from registry.services.audit_checkpoint import checkpoint_record, file_sha256


def _dump(value) -> str:
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


def audit_retention(*, before: datetime, export_dir: Path, actor=None) -> AuditCheckpoint | None:
    """Export and remove sealed events and finished executions older than ``before``."""
    audit_seal_all()
    export_dir.mkdir(parents=True, exist_ok=True)
    first_kept = (
        AuditEvent.objects.filter(sequence__isnull=False, occurred_at__gte=before)
        .order_by("sequence")
        .values_list("sequence", flat=True)
        .first()
    )
    last_sealed = (
        AuditEvent.objects.filter(sequence__isnull=False)
        .order_by("-sequence")
        .values_list("sequence", flat=True)
        .first()
    )
    if last_sealed is None:
        return None
    cut = (first_kept - 1) if first_kept is not None else last_sealed
    previous = AuditCheckpoint.objects.order_by("-sequence").first()
    if cut <= (previous.sequence if previous else 0):
        return None
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    path = export_dir / f"toolhub-retention-{stamp}-upto-{cut}.jsonl"
    events = AuditEvent.objects.filter(sequence__lte=cut).order_by("sequence")
    executions = Execution.objects.filter(created_at__lt=before, status__in=TERMINAL_STATUSES)
    with transaction.atomic():
        with path.open("w", encoding="utf-8") as out:
            count_events = 0
            last = None
            for row in events.values().iterator(chunk_size=5000):
                out.write(_dump({"type": "audit_event", **row}) + "\n")
                count_events += 1
                last = row
            count_executions = 0
            for row in executions.values().iterator(chunk_size=2000):
                row.pop("sealed_secrets", None)
                out.write(_dump({"type": "execution", **row}) + "\n")
                count_executions += 1
            out.write(
                _dump(
                    {"type": "head", "sequence": cut, "hash": last["hash"], "events": count_events}
                )
                + "\n"
            )
        checkpoint = checkpoint_record(
            sequence=cut,
            hash=last["hash"],
            removed_before=before,
            events_removed=count_events,
            executions_removed=count_executions,
            export_path=str(path),
            export_sha256=file_sha256(path),
        )
        ids = list(executions.values_list("pk", flat=True))
        Approval.objects.filter(execution_id__in=ids).delete()
        orphans = list(
            Execution.objects.filter(cached_from_id__in=ids)
            .exclude(pk__in=ids)
            .select_related("principal")
        )
        Execution.objects.filter(pk__in=[e.pk for e in orphans]).update(cached_from=None)
        for execution in orphans:
            # The record changed: its event says so, with the new content hash.
            execution.cached_from_id = None
            audit_execution_change(execution, "execution.cache_source_removed", actor=actor)
        _remove(ids, cut)
        audit_record(
            actor=actor,
            action="audit.retention",
            target=checkpoint,
            after={
                "checkpoint_sequence": cut,
                "checkpoint_hash": last["hash"],
                "events_removed": count_events,
                "executions_removed": count_executions,
                "removed_before": before.isoformat(),
                "export": str(path),
                "export_sha256": checkpoint.export_sha256,
            },
        )
    return checkpoint


def _remove(execution_ids: list, cut: int) -> None:
    """Delete the executions and the events up to ``cut`` that the new checkpoint covers."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT toolhub_execution_retention(%s::uuid[])", [execution_ids])
            cursor.execute("SELECT toolhub_audit_retention(%s)", [cut])
        return
    # No triggers elsewhere (SQLite, the embedded mode): the model refuses deletes of
    # audit rows, and retention is the one exception.
    Execution.objects.filter(pk__in=execution_ids).delete()
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {AuditEvent._meta.db_table} WHERE sequence <= %s", [cut])  # noqa: S608
