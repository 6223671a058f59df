"""Tamper evidence: the hash chain, verification, the signed head, triggers and retention."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, InternalError, ProgrammingError, connection, transaction
from django.utils import timezone

from registry.models import AuditChainHead, AuditCheckpoint, AuditEvent
from registry.services.audit import audit_record
from registry.services.audit_chain import (
    CONTENT_FIELDS,
    audit_seal_all,
    audit_verify,
    event_hash,
)
from registry.services.audit_checkpoint import checkpoint_record
from registry.services.audit_head import audit_head, audit_head_check

pytestmark = pytest.mark.django_db
PG = pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL triggers")


def write_events(n: int = 10) -> list[AuditEvent]:
    events = [
        audit_record(
            actor=None, action=f"test.event{i}", target_type="t", target_id=str(i), after={"i": i}
        )
        for i in range(n)
    ]
    AuditEvent.objects.filter(pk__in=[e.pk for e in events])
    assert audit_seal_all(grace=timedelta(0)) >= n
    return events


def tamper(sql: str, params=()) -> None:
    """Change the table behind the application's back (triggers off, as a DBA could)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = replica")
        try:
            cursor.execute(sql, params)
        finally:
            if connection.vendor == "postgresql":
                cursor.execute("SET session_replication_role = origin")


def backdate(when, ids=None) -> None:
    """Move events back to ``when`` as if written then: the time and the MAC the
    application would have made (tests of retention need old events)."""
    from registry.services.audit_auth import MAC_FIELDS, event_mac

    rows = AuditEvent.objects.all() if ids is None else AuditEvent.objects.filter(pk__in=ids)
    for row in rows.values("id", "mac", *MAC_FIELDS):
        row["occurred_at"] = when
        mac = event_mac(row) if row["mac"] else ""
        tamper(
            "UPDATE registry_auditevent SET occurred_at = %s, mac = %s WHERE id = %s",
            [when, mac, row["id"]],
        )


def seq_id(sequence: int) -> int:
    return AuditEvent.objects.get(sequence=sequence).pk


def test_an_untouched_chain_verifies():
    write_events()
    report = audit_verify()
    assert report.ok and report.checked >= 10 and report.problem is None
    head = AuditChainHead.objects.get()
    assert (report.head_sequence, report.head_hash) == (head.sequence, head.hash)


def test_sealing_is_idempotent_and_in_order():
    write_events(5)
    assert audit_seal_all(grace=timedelta(0)) == 0
    sequences = list(AuditEvent.objects.order_by("id").values_list("sequence", flat=True))
    assert sequences == sorted(sequences) and sequences[0] == 1


def test_a_changed_field_is_found_at_that_event():
    write_events()
    tamper("UPDATE registry_auditevent SET target_repr = 'nothing to see' WHERE sequence = 5")
    report = audit_verify()
    assert not report.ok
    assert (report.problem.kind, report.problem.sequence) == ("altered", 5)
    assert report.problem.event_id == seq_id(5)


def test_a_changed_json_value_is_found():
    write_events()
    tamper("UPDATE registry_auditevent SET after = %s WHERE sequence = 3", [json.dumps({"i": 999})])
    assert (audit_verify().problem.kind, audit_verify().problem.sequence) == ("altered", 3)


def test_a_deleted_event_is_found():
    write_events()
    tamper("DELETE FROM registry_auditevent WHERE sequence = 4")
    problem = audit_verify().problem
    assert (problem.kind, problem.sequence) == ("missing", 4)


def test_deleting_the_latest_events_is_found():
    write_events()
    head = AuditChainHead.objects.get().sequence
    tamper("DELETE FROM registry_auditevent WHERE sequence >= %s", [head - 1])
    problem = audit_verify().problem
    assert problem.kind == "missing" and problem.sequence == head - 1


def test_two_swapped_events_are_found():
    write_events()
    tamper("UPDATE registry_auditevent SET sequence = -1 WHERE sequence = 3")
    tamper("UPDATE registry_auditevent SET sequence = 3 WHERE sequence = 6")
    tamper("UPDATE registry_auditevent SET sequence = 6 WHERE sequence = -1")
    problem = audit_verify().problem
    assert problem.sequence == 3 and problem.kind in ("broken_link", "altered")


def insert_forged_event_after(sequence: int) -> None:
    """Shift the later events up by one and slip a well-formed event in after ``sequence``."""
    head = AuditChainHead.objects.get().sequence
    for later in range(head, sequence, -1):  # make room after ``sequence``
        tamper(
            "UPDATE registry_auditevent SET sequence = sequence + 1 WHERE sequence = %s", [later]
        )
    previous = AuditEvent.objects.get(sequence=sequence)
    forged = dict(
        id=10**9,
        occurred_at=previous.occurred_at,
        actor_name="intruder",
        action="tool.deleted",
        target_type="registry.tool",
        target_id="x",
        target_repr="forged",
        before=None,
        after=None,
        request_id="",
        client_address=None,
    )
    digest = event_hash(previous.hash, forged, sequence + 1)
    tamper(
        "INSERT INTO registry_auditevent (id, occurred_at, actor_name, action, target_type, target_id,"
        " target_repr, request_id, sequence, prev_hash, hash) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
        [
            10**9,
            previous.occurred_at,
            "intruder",
            "tool.deleted",
            "registry.tool",
            "x",
            "forged",
            "",
            sequence + 1,
            previous.hash,
            digest,
        ],
    )


def test_an_inserted_event_is_found_even_with_a_well_formed_hash():
    write_events()
    insert_forged_event_after(5)
    problem = audit_verify().problem
    # The forged event chains correctly, but it carries no authentication code.
    assert (problem.kind, problem.sequence) == ("forged", 6)


def test_verify_command_exit_status_and_api(reviewer_client, plain_client):
    write_events()
    out = io.StringIO()
    call_command("audit_verify", stdout=out)
    assert "PASS" in out.getvalue()
    assert reviewer_client.get("/api/v1/audit/verify").json()["ok"] is True
    assert plain_client.get("/api/v1/audit/verify").status_code == 403
    tamper("UPDATE registry_auditevent SET action = 'x' WHERE sequence = 2")
    with pytest.raises(CommandError) as failure:
        call_command("audit_verify", stdout=io.StringIO())
    assert failure.value.returncode == 1 and "#2" in str(failure.value)
    body = reviewer_client.get("/api/v1/audit/verify").json()
    assert body["ok"] is False and body["problem"]["sequence"] == 2


def test_signed_head_can_be_checked_later():
    write_events()
    head = audit_head()
    assert audit_head_check(head)[0]
    write_events(3)
    assert audit_head_check(head)[0]  # still in the (longer) chain
    forged = {**head, "hash": "f" * 64}
    ok, message = audit_head_check(forged)
    assert not ok and "signature" in message
    tamper(
        "UPDATE registry_auditevent SET hash = %s WHERE sequence = %s", ["e" * 64, head["sequence"]]
    )
    ok, message = audit_head_check(head)
    assert not ok and "rewritten" in message


def test_head_command_prints_and_verifies(tmp_path):
    write_events()
    out = io.StringIO()
    call_command("audit_head", stdout=out)
    head = json.loads(out.getvalue())
    assert set(head) == {"sequence", "hash", "at", "signature"}
    saved = tmp_path / "head.json"
    saved.write_text(json.dumps(head))
    verified = io.StringIO()
    call_command("audit_head", "--verify", str(saved), stdout=verified)
    assert "PASS" in verified.getvalue()
    saved.write_text(json.dumps({**head, "sequence": head["sequence"] - 1}))
    with pytest.raises(CommandError):
        call_command("audit_head", "--verify", str(saved), stdout=io.StringIO())
    missing = tmp_path / "no-such-head.json"
    with pytest.raises(CommandError, match=r"No such file: .*no-such-head\.json"):
        call_command("audit_head", "--verify", str(missing), stdout=io.StringIO())


def save_head(tmp_path) -> str:
    out = io.StringIO()
    call_command("audit_head", stdout=out)
    saved = tmp_path / "head.json"
    saved.write_text(out.getvalue())
    return str(saved)


def head_verify_failure(saved: str) -> str:
    with pytest.raises(CommandError) as failure:
        call_command("audit_head", "--verify", saved, stdout=io.StringIO())
    assert failure.value.returncode == 1
    return str(failure.value)


def test_head_verify_walks_the_chain_and_names_an_edited_earlier_event(tmp_path):
    write_events()
    saved = save_head(tmp_path)
    verified = io.StringIO()
    call_command("audit_head", "--verify", saved, stdout=verified)
    assert "PASS" in verified.getvalue() and "from the first event" in verified.getvalue()
    tamper("UPDATE registry_auditevent SET target_repr = 'nothing to see' WHERE sequence = 3")
    message = head_verify_failure(saved)
    assert message.startswith("FAIL")
    assert f"Event #3 (id {seq_id(3)}, test.event2) was altered" in message


def test_head_verify_names_a_deleted_earlier_event(tmp_path):
    write_events()
    saved = save_head(tmp_path)
    tamper("DELETE FROM registry_auditevent WHERE sequence = 4")
    message = head_verify_failure(saved)
    assert "Event #4 is missing" in message and f"event id {seq_id(5)}" in message


def test_head_verify_names_an_inserted_event(tmp_path):
    write_events()
    saved = save_head(tmp_path)
    insert_forged_event_after(5)
    message = head_verify_failure(saved)
    # The forged #6 chains from #5, but carries no authentication code.
    assert "#6" in message and "no authentication code" in message


def test_head_verify_names_the_first_of_the_events_cut_before_the_head(tmp_path):
    write_events()
    saved = save_head(tmp_path)
    head = json.loads(open(saved).read())["sequence"]
    write_events(2)  # later events stay: only the part up to the saved head is cut
    tamper("DELETE FROM registry_auditevent WHERE sequence BETWEEN %s AND %s", [head - 2, head])
    message = head_verify_failure(saved)
    assert f"events #{head - 2} to #{head} are no longer in the audit log" in message


def test_a_checkpoint_row_does_not_hide_edited_events_behind_it(tmp_path):
    write_events()
    saved = save_head(tmp_path)
    tamper("UPDATE registry_auditevent SET after = %s WHERE sequence = 3", [json.dumps({"i": 9})])
    third = AuditEvent.objects.get(sequence=3)
    # A checkpoint over #3 with #3's stored hash: the walk from it alone would pass.
    checkpoint_record(
        sequence=3, hash=third.hash, removed_before=timezone.now(), export_path="/nowhere"
    )
    message = head_verify_failure(saved)
    assert f"Event #3 (id {third.pk}, test.event2) was altered" in message


def test_head_verify_after_retention_walks_from_the_checkpoint(tmp_path):
    from executions.services.retention import audit_retention

    write_events(5)
    before_retention = audit_head()
    checkpoint = audit_retention(
        before=timezone.now() + timedelta(minutes=1), export_dir=tmp_path / "exports"
    )
    audit_seal_all(grace=timedelta(0))
    write_events(5)
    ok, message = audit_head_check(before_retention)  # its event is in the export now
    assert ok and "removed by retention" in message
    saved = save_head(tmp_path)
    verified = io.StringIO()
    call_command("audit_head", "--verify", saved, stdout=verified)
    assert f"after checkpoint #{checkpoint.sequence}" in verified.getvalue()
    target = checkpoint.sequence + 3
    tamper("UPDATE registry_auditevent SET action = 'x' WHERE sequence = %s", [target])
    message = head_verify_failure(saved)
    assert f"Event #{target} (id {seq_id(target)}, x) was altered" in message


@PG
def test_triggers_refuse_updates_and_deletes_of_audit_events():
    write_events(3)
    for sql in (
        "UPDATE registry_auditevent SET action = 'x' WHERE sequence = 1",
        "DELETE FROM registry_auditevent WHERE sequence = 1",
        "UPDATE registry_auditevent SET hash = 'x' WHERE sequence = 1",
    ):
        with pytest.raises((InternalError, ProgrammingError, IntegrityError)) as refused:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql)
        assert "append-only" in str(refused.value)
    assert audit_verify().ok


@PG
def test_triggers_let_sealing_and_user_deletion_through(django_user_model):
    user = django_user_model.objects.create_user("gone")
    audit_record(actor=user, action="test.by_user", target_type="t", target_id="1")
    audit_seal_all(grace=timedelta(0))
    user.delete()  # sets actor to NULL; the denormalized name stays and is what the hash covers
    event = AuditEvent.objects.get(action="test.by_user")
    assert event.actor_id is None and event.actor_name == "gone"
    assert audit_verify().ok


def test_retention_exports_checkpoints_and_keeps_verification_green(tmp_path):
    old = write_events(6)
    long_ago = timezone.now() - timedelta(days=400)
    backdate(long_ago, [event.pk for event in old])
    # Re-seal from scratch is not possible: the chain covers occurred_at; rebuild it for the test.
    tamper(
        "UPDATE registry_auditevent SET sequence = NULL, prev_hash = '', hash = '', sealed_at = NULL"
    )
    tamper("DELETE FROM registry_auditchainhead")
    audit_seal_all(grace=timedelta(0))
    write_events(4)
    old_head_sequence = (
        AuditEvent.objects.filter(pk=old[-1].pk).values_list("sequence", flat=True).get()
    )
    old_head = {"sequence": old_head_sequence}
    out = io.StringIO()
    call_command(
        "audit_retention",
        "--before",
        (timezone.now() - timedelta(days=30)).isoformat(),
        "--export-dir",
        str(tmp_path),
        stdout=out,
    )
    checkpoint = AuditCheckpoint.objects.get()
    assert checkpoint.events_removed >= 6
    assert not AuditEvent.objects.filter(pk__in=[e.pk for e in old]).exists()
    lines = [json.loads(line) for line in open(checkpoint.export_path)]
    exported = {line["id"] for line in lines if line["type"] == "audit_event"}
    assert {e.pk for e in old} <= exported
    assert lines[-1]["type"] == "head" and lines[-1]["hash"] == checkpoint.hash
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert report.ok, report.problem
    assert report.checkpoint == checkpoint.sequence
    assert AuditEvent.objects.filter(action="audit.retention").exists()
    # From the very start, the removed part is gone: verification says so, and why.
    from_start = audit_verify(from_checkpoint=False)
    assert not from_start.ok
    assert f"Retention removed events up to #{checkpoint.sequence}" in from_start.problem.message
    assert checkpoint.export_path in from_start.problem.message
    assert old_head["sequence"] <= checkpoint.sequence


def test_execution_audit_events_carry_the_execution_content_hash(db):
    from executions.models import Execution
    from executions.services.execution_audit import audit_execution, execution_content_hash

    execution = Execution.objects.create(status="denied", tool_name="x", principal_name="p")
    audit_execution(execution, "execution.denied")
    event = AuditEvent.objects.get(action="execution.denied")
    assert event.after["content_hash"] == execution_content_hash(execution)


@PG
def test_triggers_refuse_edits_and_deletes_of_finished_executions():
    from executions.models import Execution

    execution = Execution.objects.create(status="queued", tool_name="x", principal_name="p")
    Execution.objects.filter(pk=execution.pk).update(status="running")
    Execution.objects.filter(pk=execution.pk).update(status="succeeded", output_data={"a": 1})
    for attempt in (
        lambda: Execution.objects.filter(pk=execution.pk).update(output_data={"a": 2}),
        lambda: Execution.objects.filter(pk=execution.pk).update(status="failed"),
        lambda: Execution.objects.filter(pk=execution.pk).delete(),
    ):
        with pytest.raises((InternalError, ProgrammingError, IntegrityError)) as refused:
            with transaction.atomic():
                attempt()
        assert "immutable" in str(refused.value)
    assert Execution.objects.get(pk=execution.pk).output_data == {"a": 1}


def test_embedded_mode_seals_once_per_transaction(settings, django_capture_on_commit_callbacks):
    from registry.services.audit import _seal_now

    settings.CELERY_TASK_ALWAYS_EAGER = True
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with transaction.atomic():
            events = [
                audit_record(actor=None, action="test.once", target_type="t", target_id=str(i))
                for i in range(3)
            ]
            assert not AuditEvent.objects.filter(sequence__isnull=False).exists()
    assert [cb for cb in callbacks if cb is _seal_now] == [_seal_now]
    sealed = AuditEvent.objects.filter(pk__in=[e.pk for e in events], sequence__isnull=False)
    assert sealed.count() == 3


@PG
def test_the_trigger_holds_unfinished_rows_to_the_state_machine():
    """Every status change the trigger allows is one STATUS_TRANSITIONS lists, and back."""
    from executions.models import STATUS_TRANSITIONS, Execution, ExecutionStatus

    for old, allowed in STATUS_TRANSITIONS.items():
        for new in ExecutionStatus:
            if new == old:
                continue
            execution = Execution.objects.create(status=old, tool_name="x", principal_name="p")
            try:
                with transaction.atomic():
                    Execution.objects.filter(pk=execution.pk).update(status=new)
                moved = True
            except (InternalError, ProgrammingError, IntegrityError) as refused:
                assert "may not go from" in str(refused)
                moved = False
            assert moved == (new in allowed), (old, new)


# --------------------------------------------------------------------------- authenticity


def _plain_insert(mac: str = "", action: str = "approval.approved") -> int:
    """An event inserted with plain SQL, as anyone with write access to the table can."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO registry_auditevent (occurred_at, actor_name, action, target_type,"
            " target_id, target_repr, request_id, prev_hash, hash, mac)"
            " VALUES (%s, 'approver', %s, 'executions.approval', 'x', 'x', '', '', '', %s)"
            " RETURNING id",
            [timezone.now() - timedelta(seconds=5), action, mac],
        )
        return cursor.fetchone()[0]


@pytest.mark.parametrize("mac", ["", "0" * 64])
def test_an_event_inserted_behind_toolhubs_back_is_never_sealed(mac):
    write_events(3)
    forged = _plain_insert(mac)
    write_events(2)  # later real events are sealed past it
    row = AuditEvent.objects.get(pk=forged)
    assert row.sequence is None and row.sealed_at is not None  # refused, marked
    assert AuditChainHead.objects.get().sequence == 5
    report = audit_verify()
    assert not report.ok
    assert (report.problem.kind, report.problem.event_id) == ("forged", forged)
    assert "approval.approved" in report.problem.message


def test_every_written_event_is_authenticated_and_verifies():
    from registry.services.audit_auth import MAC_FIELDS, mac_valid

    events = write_events(4)
    for row in AuditEvent.objects.filter(pk__in=[e.pk for e in events]).values("mac", *MAC_FIELDS):
        assert len(row["mac"]) == 64 and mac_valid(row)
    assert AuditChainHead.objects.get().authenticated_since == 1
    assert audit_verify().ok


def test_a_rewritten_chain_is_found_by_the_authentication_codes():
    """Editing an event and recomputing every later hash (and the head) fooled the chain
    alone; the edited event's MAC no longer matches."""
    write_events(5)
    tamper("UPDATE registry_auditevent SET after = %s WHERE sequence = 3", ['{"i": 99}'])
    prev = AuditEvent.objects.get(sequence=2).hash
    for sequence in range(3, 6):
        row = AuditEvent.objects.filter(sequence=sequence).values(
            *CONTENT_FIELDS, "mac", "actor_ref", "uid"
        )
        digest = event_hash(prev, row.get(), sequence)
        tamper(
            "UPDATE registry_auditevent SET prev_hash = %s, hash = %s WHERE sequence = %s",
            [prev, digest, sequence],
        )
        prev = digest
    tamper("UPDATE registry_auditchainhead SET hash = %s", [prev])
    report = audit_verify()
    assert not report.ok
    assert (report.problem.kind, report.problem.sequence) == ("altered", 3)
    assert "authentication code" in report.problem.message


def test_moving_an_event_to_another_user_is_found(django_user_model):
    alice = django_user_model.objects.create_user("alice")
    mallory = django_user_model.objects.create_user("mallory")
    audit_record(actor=alice, action="grant.created", target_type="t", target_id="1")
    audit_seal_all(grace=timedelta(0))
    assert audit_verify().ok
    tamper("UPDATE registry_auditevent SET actor_id = %s", [mallory.pk])
    report = audit_verify()
    assert not report.ok and "another user" in report.problem.message


def test_signing_keys_rotate(settings):
    settings.TOOLHUB_AUDIT_SIGNING_KEY = "old-key-0123456789"
    write_events(2)
    settings.TOOLHUB_AUDIT_SIGNING_KEY = "new-key-9876543210,old-key-0123456789"
    write_events(2)  # signed with the new key
    assert audit_verify().ok
    settings.TOOLHUB_AUDIT_SIGNING_KEY = "new-key-9876543210"  # the old key dropped too soon
    report = audit_verify()
    assert not report.ok and "TOOLHUB_AUDIT_SIGNING_KEY" in report.problem.message


def test_events_from_before_authentication_stay_valid():
    """Events written by a release without MACs are sealed and verify as before; the
    first authenticated event switches the sealer to refusing MAC-less ones."""
    legacy = [_plain_insert(action=f"legacy.{i}") for i in range(2)]
    audit_seal_all(grace=timedelta(0))
    assert all(AuditEvent.objects.get(pk=pk).sequence for pk in legacy)
    assert AuditChainHead.objects.get().authenticated_since is None
    write_events(2)
    assert AuditChainHead.objects.get().authenticated_since == 3
    assert audit_verify().ok
