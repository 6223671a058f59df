"""audit_verify also proves that finished execution records still say what their
latest audit event recorded (its content_hash), not only that the events are intact."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from executions.models import Execution
from executions.services.pipeline import execution_request
from registry.services.audit_chain import audit_seal_all, audit_verify
from tests.executions.conftest import echo_caller
from tests.registry.test_audit_chain import backdate, tamper
from toolhub.exceptions import ToolHubError

pytestmark = pytest.mark.django_db


@pytest.fixture
def calls(upstream, allow_loopback, eager_tasks):
    caller = echo_caller(upstream, "verify", "echo_verify")
    user = caller["agent"].user
    done = execution_request(
        user=user, tool_ref="echo_verify", arguments={"path": "echo"}, wait=True
    )
    assert done.status == "succeeded"
    with pytest.raises(ToolHubError):
        execution_request(user=user, tool_ref="echo_verify", arguments={})  # invalid
    with pytest.raises(ToolHubError):
        execution_request(user=user, tool_ref="no_such_tool", arguments={})  # denied
    audit_seal_all(grace=timedelta(0))
    return done


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("output_data", '{"status_code": 200, "data": "forged"}'),
        ("status", "failed"),
        ("principal_name", "someone-else"),
        ("error_message", "edited"),
        ("status", "running"),  # set back to unfinished: out of the check before
        ("input_data", '{"path": "elsewhere"}'),  # input_hash kept, the arguments changed
        # Covered since content_version 2:
        ("client_address", "10.6.6.6"),
        ("request_id", "forged-request"),
        ("execution_time_ms", "1.5"),
        ("chars_in", "999"),
        ("chars_out", "1"),
        ("requested_tool", "another_tool"),
        ("tool_type", "database"),
        ("queued_at", "2020-01-01T00:00:00Z"),
        ("output_size", "5"),
        # Covered since content_version 3: the claim's bookkeeping.
        ("worker", "another-host"),
        ("deadline_at", "2020-01-01T00:00:00Z"),
        ("heartbeat_at", "2020-01-01T00:00:00Z"),
        ("sealed_secrets", "gAAAAABforged"),
        # Covered since content_version 4: which door the call came in by, and its client.
        ("entry_point", "admin"),
        ("client_name", "forged-client"),
        ("client_version", "0"),
        ("protocol_version", "2024-11-05"),
        # Covered since content_version 6: the caller's upstream connection the call used.
        ("upstream_connection_id", "42"),
    ],
)
def test_an_edited_finished_execution_fails_verification(calls, column, value):
    report = audit_verify()
    assert report.ok, report.problem
    tamper(f"UPDATE executions_execution SET {column} = %s WHERE id = %s", [value, calls.pk])  # noqa: S608
    report = audit_verify()
    assert not report.ok
    assert report.problem.kind == "record_altered"
    assert str(calls.pk) in report.problem.message

    with pytest.raises(CommandError) as failed:
        call_command("audit_verify", stdout=io.StringIO())
    assert failed.value.returncode == 1 and str(calls.pk) in str(failed.value)


def test_every_kind_of_finished_call_verifies_untouched(calls):
    assert Execution.objects.filter(status__in=["succeeded", "invalid", "denied"]).count() == 3
    report = audit_verify()
    assert report.ok, report.problem


def test_retention_removing_a_cache_source_keeps_the_cache_hits_verifiable(tmp_path):
    from django.utils import timezone

    from executions.services.execution_audit import audit_execution
    from executions.services.retention import audit_retention
    from registry.models import AuditEvent

    long_ago = timezone.now() - timedelta(days=400)
    source = Execution.objects.create(
        status="succeeded", tool_name="x", principal_name="p", created_at=long_ago
    )
    audit_execution(source, "execution.succeeded")
    backdate(long_ago)
    tamper("UPDATE executions_execution SET created_at = %s", [long_ago])
    audit_seal_all(grace=timedelta(0))
    hit = Execution.objects.create(
        status="succeeded", tool_name="x", principal_name="p", cached_from=source
    )
    audit_execution(hit, "execution.succeeded")
    audit_seal_all(grace=timedelta(0))

    audit_retention(before=timezone.now() - timedelta(days=30), export_dir=tmp_path)
    hit.refresh_from_db()
    assert not Execution.objects.filter(pk=source.pk).exists() and hit.cached_from_id is None
    changed = AuditEvent.objects.get(action="execution.cache_source_removed")
    assert changed.target_id == str(hit.pk) and changed.actor_id is None
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert report.ok, report.problem


def test_a_deleted_execution_record_fails_verification(calls):
    tamper("DELETE FROM executions_execution WHERE id = %s", [calls.pk])
    report = audit_verify()
    assert not report.ok
    assert report.problem.kind == "record_deleted"
    assert str(calls.pk) in report.problem.message
    with pytest.raises(CommandError) as failed:
        call_command("audit_verify", stdout=io.StringIO())
    assert failed.value.returncode == 1 and str(calls.pk) in str(failed.value)


def test_a_record_written_without_its_audit_event_fails_verification(calls):
    forged = Execution.objects.create(
        status="succeeded", tool_name="echo_verify", principal_name="nobody"
    )
    report = audit_verify()
    assert not report.ok
    assert report.problem.kind == "record_unaudited"
    assert str(forged.pk) in report.problem.message


def test_calls_retention_removed_or_cut_through_still_verify(tmp_path):
    """A call finished before the cut goes with its events; one that started before
    the cut and finished after it keeps its later event and its row; one still
    open at the cut keeps its row without its first event. None is a problem."""
    from django.utils import timezone

    from executions.services.execution_audit import audit_execution
    from executions.services.retention import audit_retention

    long_ago = timezone.now() - timedelta(days=400)
    old_done = Execution.objects.create(
        status="succeeded", tool_name="x", principal_name="p", created_at=long_ago
    )
    audit_execution(old_done, "execution.succeeded")
    spanning = Execution.objects.create(
        status="pending_approval", tool_name="x", principal_name="p", created_at=long_ago
    )
    audit_execution(spanning, "execution.pending_approval")
    still_open = Execution.objects.create(
        status="pending_approval", tool_name="x", principal_name="p", created_at=long_ago
    )
    audit_execution(still_open, "execution.pending_approval")
    backdate(long_ago)
    tamper("UPDATE executions_execution SET created_at = %s", [long_ago])  # not auto_now_add's
    audit_seal_all(grace=timedelta(0))
    # The spanning call finishes now, long after it was admitted.
    tamper(
        "UPDATE executions_execution SET status = 'rejected', finished_at = %s WHERE id = %s",
        [timezone.now(), spanning.pk],
    )
    spanning.refresh_from_db()
    audit_execution(spanning, "execution.rejected")
    audit_seal_all(grace=timedelta(0))

    audit_retention(before=timezone.now() - timedelta(days=30), export_dir=tmp_path)
    assert not Execution.objects.filter(pk__in=[old_done.pk, spanning.pk]).exists()
    assert Execution.objects.filter(pk=still_open.pk).exists()
    report = audit_verify()
    assert report.ok, report.problem


def test_an_unfinished_call_finished_in_the_database_fails_verification(calls):
    """A call waiting for approval, set to succeeded with a made-up output step by step
    (each step one the state machine allows) has no event of its finish."""
    from django.utils import timezone

    waiting = Execution.objects.create(
        status="pending_approval", tool_name="echo_verify", principal_name="p"
    )
    from executions.services.execution_audit import audit_execution

    audit_execution(waiting, "execution.pending_approval")
    for status in ("queued", "running"):
        Execution.objects.filter(pk=waiting.pk).update(status=status)
    Execution.objects.filter(pk=waiting.pk).update(
        status="succeeded", output_data={"paid": True}, finished_at=timezone.now()
    )
    report = audit_verify()
    assert not report.ok
    assert report.problem.kind == "record_altered"
    assert str(waiting.pk) in report.problem.message and "behind" in report.problem.message


def test_a_refused_calls_arguments_and_a_records_caller_are_covered(calls):
    """What an agent tried (a refusal's arguments) and who made the call (the user's
    id, which only a deleted user may clear) cannot be changed unnoticed."""
    refused = Execution.objects.get(status="invalid")
    tamper(
        "UPDATE executions_execution SET input_data = %s WHERE id = %s",
        ['{"path": "innocent"}', refused.pk],
    )
    report = audit_verify()
    assert not report.ok and str(refused.pk) in report.problem.message
    tamper(
        "UPDATE executions_execution SET input_data = %s WHERE id = %s",
        [json.dumps(refused.input_data), refused.pk],
    )
    assert audit_verify().ok

    from tests.factories import make_user

    other = make_user("someone-else")
    tamper("UPDATE executions_execution SET principal_id = %s WHERE id = %s", [other.pk, calls.pk])
    report = audit_verify()
    assert not report.ok and "principal_id" in report.problem.message
    # Cleared, as deleting the user does: allowed.
    tamper("UPDATE executions_execution SET principal_id = NULL WHERE id = %s", [calls.pk])
    assert audit_verify().ok


def test_the_agents_owner_a_record_names_cannot_be_changed_unnoticed(calls):
    """Four eyes reads it: moving it to another person would let the owner approve."""
    from tests.factories import make_user

    assert calls.agent_owner_id == calls.agent.owner_id
    other = make_user("someone-else")
    tamper(
        "UPDATE executions_execution SET agent_owner_id = %s WHERE id = %s", [other.pk, calls.pk]
    )
    report = audit_verify()
    assert not report.ok and "agent_owner_id" in report.problem.message
    # Cleared, as deleting the user does: allowed.
    tamper("UPDATE executions_execution SET agent_owner_id = NULL WHERE id = %s", [calls.pk])
    assert audit_verify().ok


def test_records_written_before_content_version_2_still_verify(calls):
    """An event from before version 2 carries a version-1 hash: checked as such."""
    from django.utils import timezone

    from executions.services.execution_audit import execution_content_hash, execution_summary
    from registry.services.audit import audit_record

    old = Execution.objects.create(
        status="succeeded",
        tool_name="echo_verify",
        principal_name="p",
        request_id="r-1",
        client_address="10.0.0.1",
        finished_at=timezone.now(),
    )
    summary = {
        k: v
        for k, v in execution_summary(old).items()
        if k not in ("content_version", "principal_id", "role_id", "agent_owner_id", "admitted")
    }
    summary["content_hash"] = execution_content_hash(old, 1)
    audit_record(actor=None, action="execution.succeeded", target=old, after=summary)
    audit_seal_all(grace=timedelta(0))
    assert audit_verify().ok
    # Version 1 did not cover the client address: such an edit goes unseen there...
    tamper("UPDATE executions_execution SET client_address = '10.9.9.9' WHERE id = %s", [old.pk])
    assert audit_verify().ok
    # ...but the fields it covered still are.
    tamper("UPDATE executions_execution SET error_message = 'x' WHERE id = %s", [old.pk])
    assert not audit_verify().ok


# Open calls stay bound to what their admission event recorded.


@pytest.fixture
def waiting(upstream, allow_loopback, eager_tasks):
    """A call waiting for approval, its record and its approval verified intact."""
    from registry.services import tools as tool_services

    caller = echo_caller(upstream, "waiting", "echo_waiting")
    tool_services.tool_update(actor=None, tool=caller["tool"], data={"requires_approval": True})
    pending = execution_request(
        user=caller["agent"].user, tool_ref="echo_waiting", arguments={"path": "echo"}
    )
    assert pending.status == "pending_approval"
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert report.ok, report.problem
    return pending


def _rewrite_arguments(pk, arguments: dict, *, rehash: bool) -> None:
    """Rewrite a call's arguments in SQL; with ``rehash``, its and its approval's
    input_hash to match, so the approver sees (and the approval binds) the new ones."""
    from executions.services.execution_audit import input_hash

    tamper(
        "UPDATE executions_execution SET input_data = %s WHERE id = %s",
        [json.dumps(arguments), pk],
    )
    if rehash:
        digest = input_hash(arguments)
        tamper("UPDATE executions_execution SET input_hash = %s WHERE id = %s", [digest, pk])
        tamper(
            "UPDATE executions_approval SET input_hash = %s WHERE execution_id = %s", [digest, pk]
        )


def _forge_sealed(pk) -> None:
    from registry import crypto

    sealed = crypto.encrypt_json({"api_key": "someone-elses"})
    tamper("UPDATE executions_execution SET sealed_secrets = %s WHERE id = %s", [sealed, pk])


@pytest.mark.parametrize(
    ("tampering", "kind", "named"),
    [
        (
            lambda pk: _rewrite_arguments(pk, {"path": "elsewhere"}, rehash=False),
            "record_altered",
            "input_data",
        ),
        (
            lambda pk: _rewrite_arguments(pk, {"path": "elsewhere"}, rehash=True),
            "record_altered",
            "input_hash and input_data",
        ),
        (
            lambda pk: tamper(
                "UPDATE executions_execution SET input_hash = %s WHERE id = %s", ["0" * 64, pk]
            ),
            "record_altered",
            "input_hash",
        ),
        (_forge_sealed, "record_altered", "sealed_secrets"),
        (
            lambda pk: tamper("DELETE FROM executions_approval WHERE execution_id = %s", [pk]),
            "record_deleted",
            "approval record is gone",
        ),
    ],
    ids=["input_data_alone", "arguments_rehashed", "input_hash", "sealed_secrets", "approval"],
)
def test_an_open_call_altered_in_the_database_fails_verification(waiting, tampering, kind, named):
    tampering(waiting.pk)
    report = audit_verify()
    assert not report.ok
    assert report.problem.kind == kind
    assert str(waiting.pk) in report.problem.message and named in report.problem.message

    with pytest.raises(CommandError) as failed:
        call_command("audit_verify", stdout=io.StringIO())
    assert failed.value.returncode == 1 and str(waiting.pk) in str(failed.value)


@pytest.mark.parametrize(
    ("tampering", "named"),
    [
        (
            lambda pk: _rewrite_arguments(pk, {"path": "elsewhere"}, rehash=True),
            "input_hash and input_data",
        ),
        (_forge_sealed, "sealed_secrets"),
        (
            lambda pk: tamper(
                "UPDATE registry_auditevent SET mac = %s WHERE target_id = %s", ["0" * 64, str(pk)]
            ),
            "no authentic admission event",
        ),
    ],
    ids=["arguments_rehashed", "sealed_secrets", "admission_not_authentic"],
)
def test_a_worker_refuses_a_queued_call_that_no_longer_carries_what_was_admitted(
    waiting, upstream, tampering, named
):
    from executions.services.runner import execution_run

    tamper(
        "UPDATE executions_execution SET status = 'queued', queued_at = now() WHERE id = %s",
        [waiting.pk],
    )
    tampering(waiting.pk)
    execution_run(execution_id=waiting.pk)
    waiting.refresh_from_db()
    assert waiting.status == "denied" and waiting.error_type == "integrity_error"
    assert named in waiting.error_message
    assert upstream.requests == []


def test_a_finished_call_whose_arguments_were_rewritten_while_it_waited_fails_verification(
    waiting,
):
    """Its later events (here the worker's refusal) hash the rewritten row: the first
    one, the admission, still says what was asked."""
    from executions.services.runner import execution_run

    _rewrite_arguments(waiting.pk, {"path": "elsewhere"}, rehash=True)
    tamper(
        "UPDATE executions_execution SET status = 'queued', queued_at = now() WHERE id = %s",
        [waiting.pk],
    )
    execution_run(execution_id=waiting.pk)
    waiting.refresh_from_db()
    assert waiting.is_terminal
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert not report.ok and report.problem.kind == "record_altered"
    assert str(waiting.pk) in report.problem.message and "admitted" in report.problem.message


@pytest.fixture
def artifact(upstream, allow_loopback, eager_tasks):
    """A finished call whose output was kept as an artifact."""
    from django.core.files.storage import default_storage

    from registry.services import tools as tool_services

    caller = echo_caller(upstream, "artifact", "echo_artifact")
    tool = caller["tool"]
    tool_services.tool_update(actor=None, tool=tool, data={"max_response_bytes": 1024})
    tool_services.config_set(
        actor=None, tool=tool, config_key="query_params", config_value={"size": "5000"}
    )
    done = execution_request(
        user=caller["agent"].user, tool_ref="echo_artifact", arguments={"path": "large"}, wait=True
    )
    assert done.status == "succeeded" and done.output_artifact
    assert audit_verify().ok
    return default_storage.path(done.output_artifact), done


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda path: open(path, "r+b").write(b"X"), "no longer matches the digest"),
        (lambda path: __import__("os").remove(path), "is gone"),
    ],
    ids=["edited", "deleted"],
)
def test_an_output_artifact_altered_on_disk_fails_verification(artifact, edit, named):
    path, done = artifact
    edit(path)
    report = audit_verify()
    assert not report.ok and report.problem.kind == "record_altered"
    assert str(done.pk) in report.problem.message and named in report.problem.message


def test_a_call_created_after_the_retention_cut_but_before_retention_ran_cannot_be_deleted_unnoticed(
    tmp_path,
):
    """Retention removes only calls created before its cut: one created after it (and
    before retention ran) that is gone was deleted behind ToolHub's back."""
    from django.utils import timezone

    from executions.services.execution_audit import audit_execution
    from executions.services.retention import audit_retention

    long_ago = timezone.now() - timedelta(days=400)
    old_done = Execution.objects.create(
        status="succeeded", tool_name="x", principal_name="p", created_at=long_ago
    )
    audit_execution(old_done, "execution.succeeded")
    backdate(long_ago)
    tamper("UPDATE executions_execution SET created_at = %s", [long_ago])
    audit_seal_all(grace=timedelta(0))
    # Admitted after the cut (30 days ago), before retention runs (now).
    recent = Execution.objects.create(status="queued", tool_name="x", principal_name="p")
    audit_execution(recent, "execution.queued")
    audit_seal_all(grace=timedelta(0))

    audit_retention(before=timezone.now() - timedelta(days=30), export_dir=tmp_path)
    assert not Execution.objects.filter(pk=old_done.pk).exists()
    report = audit_verify()
    assert report.ok, report.problem
    tamper("DELETE FROM executions_execution WHERE id = %s", [recent.pk])
    report = audit_verify()
    assert not report.ok and report.problem.kind == "record_deleted"
    assert str(recent.pk) in report.problem.message
    assert "after the latest retention cut" in report.problem.message
