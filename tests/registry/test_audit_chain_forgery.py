"""Forgeries that need database access: copied events."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from registry.models import AuditChainHead, AuditEvent
from registry.services.audit_chain import (
    audit_seal_all,
    audit_verify,
    event_hash,
)

from .test_audit_chain import PG, tamper, write_events

pytestmark = pytest.mark.django_db

# What the probe copied: every column an INSERT ... SELECT can take over, the MAC included.
COPIED = (
    "occurred_at, actor_id, actor_ref, actor_name, action, target_type, target_id, "
    "target_repr, before, after, request_id, client_address, mac, prev_hash, hash"
)


def copy_event(sequence: int, *, columns: str = COPIED) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO registry_auditevent ({columns}) SELECT {columns} "  # noqa: S608
            "FROM registry_auditevent WHERE sequence = %s RETURNING id",
            [sequence],
        )
        return cursor.fetchone()[0]


# --------------------------------------------------------------------------- copies


def test_a_copied_event_under_a_new_id_is_refused_and_named():
    write_events(3)
    copy = copy_event(2)
    write_events(2)
    row = AuditEvent.objects.get(pk=copy)
    assert row.sequence is None and row.sealed_at is not None  # refused, never chained
    report = audit_verify()
    assert not report.ok
    assert (report.problem.kind, report.problem.event_id) == ("forged", copy)


def test_a_copied_event_keeping_its_identity_is_refused_by_the_database():
    write_events(2)
    with pytest.raises(IntegrityError), transaction.atomic():
        copy_event(1, columns=COPIED + ", uid")


@PG
def test_a_copy_with_its_identity_is_named_where_the_constraint_was_dropped():
    write_events(3)
    with connection.cursor() as cursor:
        cursor.execute(
            "ALTER TABLE registry_auditevent DROP CONSTRAINT registry_auditevent_uid_key"
        )
    copy = copy_event(2, columns=COPIED + ", uid")
    audit_seal_all(grace=timedelta(0))
    assert AuditEvent.objects.get(pk=copy).sequence is None  # the sealer refused it
    report = audit_verify()
    assert (report.problem.kind, report.problem.event_id) == ("forged", copy)
    # Chained by hand (as a superuser could, recomputing the hash): still a copy.
    head = AuditChainHead.objects.get()
    row = AuditEvent.objects.filter(pk=copy).values().get()
    digest = event_hash(head.hash, row, head.sequence + 1)
    tamper(
        "UPDATE registry_auditevent SET sequence = %s, prev_hash = %s, hash = %s WHERE id = %s",
        [head.sequence + 1, head.hash, digest, copy],
    )
    tamper(
        "UPDATE registry_auditchainhead SET sequence = %s, hash = %s", [head.sequence + 1, digest]
    )
    report = audit_verify()
    assert not report.ok and (report.problem.kind, report.problem.event_id) == ("forged", copy)
    assert "copy of event id" in report.problem.message


def test_events_signed_before_identities_stay_valid_and_none_follows_an_identified_one():
    """Version 1 MACs (no uid) verify as before; once a version 2 event is sealed, the
    sealer refuses a version 1 event, as it refuses one without a MAC."""
    from registry.services.audit_auth import MAC_FIELDS, event_mac

    def v1_event(action: str) -> int:
        row = {name: None for name in MAC_FIELDS}
        row.update(
            occurred_at=timezone.now() - timedelta(seconds=5),
            actor_name="system",
            action=action,
            target_type="t",
            target_id="1",
            target_repr="",
            request_id="",
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO registry_auditevent (occurred_at, actor_name, action, target_type,"
                " target_id, target_repr, request_id, prev_hash, hash, mac)"
                " VALUES (%s, 'system', %s, 't', '1', '', '', '', '', %s) RETURNING id",
                [row["occurred_at"], action, event_mac(row)],
            )
            return cursor.fetchone()[0]

    legacy = v1_event("legacy.signed")
    audit_seal_all(grace=timedelta(0))
    assert AuditEvent.objects.get(pk=legacy).sequence == 1
    write_events(2)
    assert AuditChainHead.objects.get().identified_since == 2
    assert audit_verify().ok
    late = v1_event("legacy.late")
    audit_seal_all(grace=timedelta(0))
    assert AuditEvent.objects.get(pk=late).sequence is None
    report = audit_verify()
    assert (report.problem.kind, report.problem.event_id) == ("forged", late)
