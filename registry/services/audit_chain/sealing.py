"""Sealing: giving new audit events their place and hash in the chain."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from registry.models import AuditChainHead, AuditEvent
from registry.services.audit_auth import seal_mac
from registry.services.audit_chain.authenticity import _authentic, _first_with_uid, _uids_taken
from registry.services.audit_chain.hashing import AUTH_FIELDS, CONTENT_FIELDS, GENESIS, event_hash

logger = logging.getLogger("registry.services.audit_chain")

SEAL_GRACE = timedelta(seconds=1)


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


def audit_seal_all(*, batch: int = 5000, grace: timedelta = SEAL_GRACE, now=None) -> int:
    total = 0
    while True:
        sealed, refused = _seal_batch(batch=batch, grace=grace, now=now)
        total += sealed
        if sealed == 0 and refused == 0:
            return total
