"""Ways around the admission check found by probing it: each test says what should hold.

A call admitted as waiting for approval runs only once a person approved it: a row
moved to ``queued`` in the database, its admitted fields untouched, is still a call
nobody approved.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from executions.models import Approval, Execution
from executions.services.admission import GuardDenied
from executions.services.pipeline import execution_request
from executions.services.runner import execution_run
from registry.services import guards as guard_services
from registry.services.audit_chain import audit_seal_all, audit_verify
from tests.executions.conftest import echo_caller
from tests.executions.test_admitted_fields import waiting
from tests.registry.test_audit_chain import tamper

__all__ = ["waiting"]  # the fixture, shared

pytestmark = pytest.mark.django_db


def _queue_without_approval(pk) -> None:
    tamper(
        "UPDATE executions_execution SET status = 'queued', queued_at = now() WHERE id = %s",
        [pk],
    )


def test_a_worker_refuses_a_call_queued_in_the_database_while_it_waited_for_approval(
    waiting, upstream
):
    pk = waiting["pending"].pk
    _queue_without_approval(pk)
    execution_run(execution_id=pk)
    row = Execution.objects.get(pk=pk)
    assert upstream.requests == [], "a call nobody approved reached the upstream"
    assert row.status == "denied" and row.reason_code == "integrity_error"


def test_a_worker_refuses_a_call_whose_approval_was_marked_approved_in_the_database(
    waiting, upstream
):
    pk = waiting["pending"].pk
    tamper(
        "UPDATE executions_approval SET status = 'approved', decided_at = now(), "
        "reason = 'ok' WHERE execution_id = %s",
        [pk],
    )
    _queue_without_approval(pk)
    execution_run(execution_id=pk)
    assert upstream.requests == [], "a call nobody approved reached the upstream"


def test_a_call_queued_in_the_database_while_it_waited_for_approval_fails_verification(
    waiting,
):
    pk = waiting["pending"].pk
    assert Approval.objects.filter(execution_id=pk).exists()
    _queue_without_approval(pk)
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert not report.ok
    assert str(pk) in report.problem.message


def test_a_worker_refuses_a_call_denied_at_admission_and_queued_in_the_database(
    upstream, allow_loopback, eager_tasks
):
    """Admission refused the call (a guard denied it): no later row state makes it run."""
    caller = echo_caller(upstream, "denied", "echo_denied")
    guard_services.guard_create(
        actor=None,
        tool=caller["tool"],
        name="deny-etc",
        kind="arguments",
        action="deny",
        config={"condition": {"properties": {"path": {"pattern": "^etc"}}, "required": ["path"]}},
    )
    with pytest.raises(GuardDenied):
        execution_request(
            user=caller["agent"].user, tool_ref="echo_denied", arguments={"path": "etc"}
        )
    denied = Execution.objects.get(tool=caller["tool"])
    assert denied.status == "denied"
    _queue_without_approval(denied.pk)
    execution_run(execution_id=denied.pk)
    assert upstream.requests == [], "a call the guard denied reached the upstream"
