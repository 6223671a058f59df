"""What admission fixed of a call (its tool, caller, the owner four eyes reads, its roles,
its door) stays bound to the call's first authentic event: a rewrite in the database is
refused by the worker and by approving, and named by audit_verify, open or finished."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from executions.models import Approval, Execution
from executions.services.approvals import approval_decide
from executions.services.pipeline import execution_cancel, execution_request
from executions.services.runner import execution_run
from registry.services import tools as tool_services
from registry.services.audit_chain import audit_seal_all, audit_verify
from tests.executions.conftest import echo_caller
from tests.factories import make_user
from tests.registry.test_audit_chain import tamper
from toolhub.exceptions import Conflict

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting(upstream, allow_loopback, eager_tasks):
    """A call waiting for approval (verified intact), and another tool it could be
    pointed at: one that calls the upstream elsewhere."""
    caller = echo_caller(upstream, "admitted", "echo_admitted")
    tool_services.tool_update(actor=None, tool=caller["tool"], data={"requires_approval": True})
    other = tool_services.tool_create(
        actor=None,
        name="echo_elsewhere",
        type="http",
        timeout_seconds=5,
        parameters=[{"name": "path", "type": "string", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/elsewhere/{path}"},
        ],
    )
    pending = execution_request(
        user=caller["agent"].user, tool_ref="echo_admitted", arguments={"path": "echo"}
    )
    assert pending.status == "pending_approval"
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert report.ok, report.problem
    return {**caller, "pending": pending, "other": other}


# Each rewrite the application's database role could make of an open call: the column
# and the value, from the call's context.
REWRITES = {
    "tool_id": lambda ctx: str(ctx["other"].pk),
    "tool_name": lambda ctx: "echo_elsewhere",
    "agent_owner_id": lambda ctx: make_user("someone-else").pk,
    "roles_used": lambda ctx: json.dumps(["approvers"]),
    "entry_point": lambda ctx: "admin",
    "principal_name": lambda ctx: "someone-else",
    "request_id": lambda ctx: "forged-request",
    "client_name": lambda ctx: "forged-client",
}


def _rewrite(ctx, column: str) -> None:
    tamper(
        f"UPDATE executions_execution SET {column} = %s WHERE id = %s",  # noqa: S608
        [REWRITES[column](ctx), ctx["pending"].pk],
    )


def _assert_named(column: str, pk) -> None:
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert not report.ok
    assert report.problem.kind == "record_altered"
    assert str(pk) in report.problem.message and column in report.problem.message


@pytest.mark.parametrize("column", REWRITES)
def test_rewriting_what_admission_fixed_of_an_open_call_fails_verification(waiting, column):
    _rewrite(waiting, column)
    _assert_named(column, waiting["pending"].pk)


@pytest.mark.parametrize("column", REWRITES)
def test_rewriting_what_admission_fixed_of_a_call_fails_verification_after_it_finishes(
    waiting, column
):
    """Its later events (here its cancellation) describe the rewritten row: the
    admission event still says what was admitted."""
    _rewrite(waiting, column)
    cancelled = execution_cancel(
        actor=waiting["owner"], execution=Execution.objects.get(pk=waiting["pending"].pk)
    )
    assert cancelled.status == "cancelled"
    _assert_named(column, waiting["pending"].pk)


@pytest.mark.parametrize("column", REWRITES)
def test_a_worker_refuses_a_call_whose_admitted_fields_were_rewritten(waiting, upstream, column):
    pk = waiting["pending"].pk
    tamper(
        "UPDATE executions_execution SET status = 'queued', queued_at = now() WHERE id = %s",
        [pk],
    )
    _rewrite(waiting, column)
    execution_run(execution_id=pk)
    refused = Execution.objects.get(pk=pk)
    assert refused.status == "denied" and refused.error_type == "integrity_error"
    assert column in refused.error_message and "not run" in refused.error_message
    assert upstream.requests == []
    # The refusal is on the record, and the rewrite stays named.
    _assert_named(column, pk)


def test_the_worker_does_not_run_another_tool_than_the_one_admitted(waiting, upstream):
    pk = waiting["pending"].pk
    tamper(
        "UPDATE executions_execution SET status = 'queued', queued_at = now(), tool_id = %s, "
        "tool_name = %s WHERE id = %s",
        [str(waiting["other"].pk), "echo_elsewhere", pk],
    )
    execution_run(execution_id=pk)
    refused = Execution.objects.get(pk=pk)
    assert refused.status == "denied" and refused.reason_code == "integrity_error"
    assert "tool_id and tool_name" in refused.error_message
    assert upstream.requests == []  # neither /elsewhere/echo nor /echo


def test_a_call_whose_agent_owner_was_rewritten_cannot_be_approved(waiting, approver_user):
    """Four eyes reads the owner the record names: rewritten, the call is closed instead."""
    from registry.services import grants as grant_services

    grant_services.grant_create(
        actor=None, role=approver_user.groups.get(), action="approve", tool=waiting["tool"]
    )
    pk = waiting["pending"].pk
    _rewrite(waiting, "agent_owner_id")
    approval = Approval.objects.select_related("execution").get(execution_id=pk)
    with pytest.raises(Conflict) as refused:
        approval_decide(actor=approver_user, approval=approval, approve=True)
    assert refused.value.code == "arguments_changed"
    assert "agent_owner_id" in refused.value.message
    closed = Execution.objects.get(pk=pk)
    assert closed.status == "denied" and closed.error_type == "integrity_error"
