"""audit_verify compares every field an approval's decision rests on (why the call waits,
the condition it matched, until when, who decided) with the approval's authentic events."""

from __future__ import annotations

from datetime import timedelta

import pytest

from executions.models import Approval
from executions.services.approvals import approval_decide
from executions.services.pipeline import execution_request
from registry.models import AuditEvent
from registry.services import grants as grant_services
from registry.services import tools as tool_services
from registry.services.audit_chain import audit_seal_all, audit_verify
from tests.executions.conftest import echo_caller
from tests.factories import make_user
from tests.registry.test_audit_chain import tamper

pytestmark = pytest.mark.django_db


@pytest.fixture
def approval(upstream, allow_loopback, eager_tasks, approver_user):
    """The pending approval of a call, verified intact; the approver may decide on it."""
    caller = echo_caller(upstream, "asked", "echo_asked")
    tool_services.tool_update(actor=None, tool=caller["tool"], data={"requires_approval": True})
    grant_services.grant_create(
        actor=None, role=approver_user.groups.get(), action="approve", tool=caller["tool"]
    )
    pending = execution_request(
        user=caller["agent"].user, tool_ref="echo_asked", arguments={"path": "echo"}
    )
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert report.ok, report.problem
    return Approval.objects.select_related("execution").get(execution_id=pending.pk)


def _reject(approval, approver):
    approval_decide(actor=approver, approval=approval, approve=False, reason="not today")
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert report.ok, report.problem


def test_an_approval_is_recorded_when_it_is_asked_for(approval):
    event = AuditEvent.objects.get(action="approval.requested", target_id=str(approval.pk))
    assert event.after["required_because"] == "tool_requires_approval"
    assert event.after["status"] == "pending" and event.after["expires_at"]


EDITS = {
    "required_because": "guard_requires_approval",
    "condition_matched": '{"path": "echo"}',
    "expires_at": "2999-01-01T00:00:00Z",
}


@pytest.mark.parametrize("column", EDITS)
@pytest.mark.parametrize("decided", [False, True], ids=["pending", "decided"])
def test_an_edited_approval_fails_verification(approval, approver_user, column, decided):
    if decided:
        _reject(approval, approver_user)
    tamper(
        f"UPDATE executions_approval SET {column} = %s WHERE id = %s",  # noqa: S608
        [EDITS[column], approval.pk],
    )
    report = audit_verify()
    assert not report.ok and report.problem.kind == "record_altered"
    assert str(approval.pk) in report.problem.message and column in report.problem.message


def test_who_decided_an_approval_cannot_be_changed_unnoticed(approval, approver_user):
    _reject(approval, approver_user)
    other = make_user("someone-else")
    tamper(
        "UPDATE executions_approval SET decided_by_id = %s WHERE id = %s", [other.pk, approval.pk]
    )
    report = audit_verify()
    assert not report.ok and report.problem.kind == "record_altered"
    assert "decided_by_id" in report.problem.message
    # Cleared, as deleting the user does: allowed.
    tamper("UPDATE executions_approval SET decided_by_id = NULL WHERE id = %s", [approval.pk])
    assert audit_verify().ok
