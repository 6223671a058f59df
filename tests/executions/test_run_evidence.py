"""A call runs only when an authentic event of its own lets it: its admission queued
it, or a person approved it (the approve service's event). Any other way to
``queued``, ``running`` or a finish is refused by the worker and named by audit_verify."""

from __future__ import annotations

from datetime import timedelta

import pytest

from executions.models import Approval, Execution
from executions.services.approvals import approval_decide
from executions.services.runner import execution_run
from registry.services import grants as grant_services
from registry.services.audit_chain import audit_seal_all, audit_verify
from tests.executions.test_admitted_fields import waiting
from tests.registry.test_audit_chain import tamper

__all__ = ["waiting"]  # the fixture, shared

pytestmark = pytest.mark.django_db


def _verified() -> object:
    audit_seal_all(grace=timedelta(0))
    return audit_verify()


def test_a_call_a_person_approved_is_run_by_the_worker_and_verifies(
    waiting, upstream, approver_user
):
    grant_services.grant_create(
        actor=None, role=approver_user.groups.get(), action="approve", tool=waiting["tool"]
    )
    pk = waiting["pending"].pk
    approval = Approval.objects.select_related("execution").get(execution_id=pk)
    approval_decide(actor=approver_user, approval=approval, approve=True)
    assert Execution.objects.get(pk=pk).status == "queued"  # sent to the workers on commit
    execution_run(execution_id=pk)
    assert Execution.objects.get(pk=pk).status == "succeeded"
    assert len(upstream.requests) == 1
    report = _verified()
    assert report.ok, report.problem


def test_a_call_set_running_in_the_database_while_it_waited_for_approval_fails_verification(
    waiting,
):
    pk = waiting["pending"].pk
    tamper(
        "UPDATE executions_execution SET status = 'running', started_at = now() WHERE id = %s",
        [pk],
    )
    report = _verified()
    assert not report.ok
    assert str(pk) in report.problem.message and "let it run" in report.problem.message


def test_a_call_given_a_cached_answer_in_the_database_while_it_waited_fails_verification(
    waiting,
):
    pk = waiting["pending"].pk
    tamper("UPDATE executions_execution SET cached_from_id = id WHERE id = %s", [pk])
    report = _verified()
    assert not report.ok
    assert str(pk) in report.problem.message and "cached_from_id" in report.problem.message


def test_a_worker_refuses_a_call_given_a_cached_answer_in_the_database_after_approval(
    waiting, upstream, approver_user
):
    grant_services.grant_create(
        actor=None, role=approver_user.groups.get(), action="approve", tool=waiting["tool"]
    )
    pk = waiting["pending"].pk
    approval = Approval.objects.select_related("execution").get(execution_id=pk)
    approval_decide(actor=approver_user, approval=approval, approve=True)
    assert Execution.objects.get(pk=pk).status == "queued"  # sent to the workers on commit
    tamper("UPDATE executions_execution SET cached_from_id = id WHERE id = %s", [pk])
    execution_run(execution_id=pk)
    row = Execution.objects.get(pk=pk)
    assert upstream.requests == []
    assert row.status == "denied" and row.reason_code == "integrity_error"
    assert "cached_from_id" in row.error_message
