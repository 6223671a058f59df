"""Forgeries that need database access: copied events, forged checkpoints, lifted triggers."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from registry.models import AuditChainHead, AuditCheckpoint, AuditEvent
from registry.services.audit_chain import (
    audit_seal_all,
    audit_verify,
    event_hash,
)
from registry.services.audit_head import audit_head, audit_head_check

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
    assert not report.ok and report.problem.event_id == copy


def test_deleting_an_event_and_rechaining_the_rest_is_found():
    """The chain's hashes are plain SHA-256: delete #3, renumber and recompute every later
    hash and the head, and the chain alone fits again. The sealer's MAC of each event's
    place does not."""
    write_events(6)
    tamper("DELETE FROM registry_auditevent WHERE sequence = 3")
    prev = AuditEvent.objects.get(sequence=2).hash
    for old in range(4, 7):
        row = AuditEvent.objects.filter(sequence=old).values().get()
        digest = event_hash(prev, row, old - 1)
        tamper(
            "UPDATE registry_auditevent SET sequence = %s, prev_hash = %s, hash = %s WHERE id = %s",
            [old - 1, prev, digest, row["id"]],
        )
        prev = digest
    tamper("UPDATE registry_auditchainhead SET sequence = 5, hash = %s", [prev])
    report = audit_verify()
    assert not report.ok
    assert (report.problem.kind, report.problem.sequence) == ("altered", 3)
    assert "seal" in report.problem.message


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


# --------------------------------------------------------------------------- checkpoints


def forge_checkpoint(sequence: int, export_path: str = "/nonexistent/export.jsonl") -> None:
    """The probe: a checkpoint row written as the database superuser, then the events up
    to it deleted (triggers off)."""
    digest = AuditEvent.objects.get(sequence=sequence).hash
    tamper(
        "INSERT INTO registry_auditcheckpoint (sequence, hash, created_at, removed_before,"
        " events_removed, executions_removed, export_path)"
        " VALUES (%s, %s, %s, %s, %s, 0, %s)",
        [sequence, digest, timezone.now(), timezone.now(), sequence, export_path],
    )
    tamper("DELETE FROM registry_auditevent WHERE sequence <= %s", [sequence])


def test_a_forged_retention_checkpoint_does_not_erase_history_undetected():
    write_events(4)
    saved_early = audit_head()  # at #4: removed "by retention", as the forged row says
    write_events(6)
    saved_late = audit_head()  # at #10: the walk from the forged checkpoint would reach it
    forge_checkpoint(6)
    report = audit_verify()
    assert not report.ok
    assert (report.problem.kind, report.problem.sequence) == ("forged_checkpoint", 6)
    for head in (saved_late, saved_early):
        ok, message = audit_head_check(head)
        assert not ok, message
        assert "Checkpoint #6" in message


def test_checkpoints_are_chained_so_removing_or_altering_one_is_found():
    from registry.services.audit_checkpoint import checkpoint_record

    write_events(6)
    for sequence in (2, 4):
        checkpoint_record(
            sequence=sequence,
            hash=AuditEvent.objects.get(sequence=sequence).hash,
            removed_before=timezone.now(),
            export_path="/nowhere",
        )
    assert audit_verify().ok
    tamper("DELETE FROM registry_auditcheckpoint WHERE sequence = 2")
    report = audit_verify()
    assert (report.problem.kind, report.problem.sequence) == ("forged_checkpoint", 4)
    tamper("UPDATE registry_auditcheckpoint SET events_removed = 99 WHERE sequence = 4")
    assert audit_verify().problem.kind == "forged_checkpoint"


@PG
def test_checkpoints_are_append_only():
    from registry.services.audit_checkpoint import checkpoint_record

    write_events(2)
    checkpoint_record(sequence=1, hash="x", removed_before=timezone.now(), export_path="/x")
    for sql in (
        "UPDATE registry_auditcheckpoint SET sequence = 2",
        "DELETE FROM registry_auditcheckpoint",
    ):
        with pytest.raises(Exception, match="append-only"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(sql)


def retention_of_everything(tmp_path):
    from executions.services.retention import audit_retention

    return audit_retention(
        before=timezone.now() + timedelta(minutes=1), export_dir=tmp_path / "exports"
    )


def test_the_export_of_a_checkpoint_is_checked_when_reachable_and_named_when_not(tmp_path):
    write_events(5)
    saved = audit_head()
    checkpoint = retention_of_everything(tmp_path)
    audit_seal_all(grace=timedelta(0))
    assert checkpoint.mac and len(checkpoint.export_sha256) == 64
    report = audit_verify()
    assert report.ok and report.warnings == [], (report.problem, report.warnings)
    ok, message = audit_head_check(saved)
    assert ok and "holds it with this hash" in message

    export = checkpoint.export_path
    lines = open(export).read().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "action": "nothing.to.see"})
    open(export, "w").write("\n".join(lines) + "\n")
    report = audit_verify()
    assert (report.problem.kind, report.problem.sequence) == ("export_altered", checkpoint.sequence)
    ok, message = audit_head_check(saved)
    assert not ok and "was altered" in message

    (tmp_path / "exports").joinpath(export.rsplit("/", 1)[-1]).unlink()
    report = audit_verify()
    assert report.ok  # the database is intact; what could not be checked is said
    assert any("cannot be read here" in warning for warning in report.warnings)
    ok, message = audit_head_check(saved)
    assert ok and "cannot be read here" in message


def test_a_checkpoint_from_before_authentication_is_accepted_when_its_event_names_it(tmp_path):
    """Checkpoints written before they carried a MAC: the authenticated audit.retention
    event written with each still vouches for it."""
    write_events(3)
    checkpoint = retention_of_everything(tmp_path)
    tamper("UPDATE registry_auditcheckpoint SET mac = '', export_sha256 = ''")
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert report.ok, report.problem
    assert AuditCheckpoint.objects.get().sequence == checkpoint.sequence
    tamper("UPDATE registry_auditcheckpoint SET hash = %s", ["f" * 64])
    assert audit_verify().problem.kind == "forged_checkpoint"


# --------------------------------------------------------------------------- triggers

APP_LOGIN = "chain_app_login"  # a login with the application's table rights, not the owner


@pytest.fixture
def app_login():
    """A connection as a non-superuser login holding the table privileges the app has."""
    import psycopg

    settings = connection.settings_dict
    with connection.cursor() as cursor:
        cursor.execute(f"DROP ROLE IF EXISTS {APP_LOGIN}")
        cursor.execute(f"CREATE ROLE {APP_LOGIN} LOGIN NOSUPERUSER NOCREATEROLE")
        cursor.execute(
            "GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA public "
            f"TO {APP_LOGIN}"
        )
        cursor.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {APP_LOGIN}")
    login = psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        dbname=settings["NAME"],
        user=APP_LOGIN,
        autocommit=True,
    )
    try:
        yield login
    finally:
        login.close()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP OWNED BY {APP_LOGIN}")
            cursor.execute(f"DROP ROLE {APP_LOGIN}")


@PG
@pytest.mark.django_db(transaction=True)
def test_a_session_cannot_lift_the_triggers_with_a_setting(app_login, tmp_path):
    import psycopg

    from executions.models import Execution

    write_events(3)
    finished = Execution.objects.create(status="denied", tool_name="x", principal_name="p")
    attempts = (
        ("DELETE FROM registry_auditevent WHERE sequence = 1", []),
        ("DELETE FROM executions_execution WHERE id = %s", [finished.pk]),
        ("SELECT toolhub_audit_retention(1)", []),  # no checkpoint at #1: the function refuses
        ("TRUNCATE registry_auditevent", []),  # fires no row trigger
        ("TRUNCATE executions_execution CASCADE", []),
        ("TRUNCATE registry_auditcheckpoint", []),
    )
    for sql, params in attempts:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with app_login.transaction():
                app_login.execute("SET LOCAL toolhub.retention = 'on'")
                app_login.execute(sql, params)
    assert AuditEvent.objects.filter(sequence=1).exists()
    assert Execution.objects.filter(pk=finished.pk).exists()

    # The retention functions run for the login (SECURITY DEFINER), only as far as a
    # checkpoint covers.
    from registry.services.audit_checkpoint import checkpoint_record

    first = AuditEvent.objects.get(sequence=1)
    checkpoint_record(sequence=1, hash=first.hash, removed_before=timezone.now(), export_path="/x")
    assert app_login.execute("SELECT toolhub_audit_retention(1)").fetchone() == (1,)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app_login.execute("SELECT toolhub_audit_retention(2)")

    checkpoint = retention_of_everything(tmp_path)  # the retention command still works
    assert checkpoint.events_removed == 2 and checkpoint.executions_removed == 1
    assert not Execution.objects.filter(pk=finished.pk).exists()
    assert not AuditEvent.objects.filter(sequence__lte=3).exists()
    audit_seal_all(grace=timedelta(0))
    assert audit_verify().ok
