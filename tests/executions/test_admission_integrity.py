"""A call waiting for approval stays bound to what its admission event recorded: arguments
rewritten in the database are refused by the worker (a real one), never sent upstream."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from executions.models import Approval, Execution
from executions.services.execution_audit import input_hash
from registry.models import AuditEvent
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from registry.services.audit_chain import audit_seal_all, audit_verify
from tests.conftest import token_client
from tests.factories import make_user
from tests.registry.test_audit_chain import tamper
from tests.workers import celery_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def gated(upstream, allow_loopback):
    owner = make_user("owner-integrity")
    approver = make_user("approver-integrity", is_staff=True)
    callers = role_services.role_create(actor=None, name="integrity-callers")
    approvers = role_services.role_create(actor=None, name="integrity-approvers")
    approver.groups.add(approvers)
    agent = agent_services.agent_create(
        actor=None, name="agent-integrity", owner=owner, role_ids=[callers.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name="payout",
        type="http",
        timeout_seconds=10,
        requires_approval=True,
        parameters=[
            {"name": "path", "type": "string", "required": True},
            {"name": "amount", "type": "number", "required": True},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}"},
        ],
    )
    grant_services.grant_create(actor=None, role=callers, action="execute", tool=tool)
    grant_services.grant_create(actor=None, role=approvers, action="approve", tool=tool)
    return {
        "agent": token_client(agent.user),
        "approver": token_client(approver),
        "upstream": upstream,
    }


def _request(gated, amount) -> tuple[str, Approval]:
    pending = gated["agent"].post(
        "/api/v1/executions",
        {"tool": "payout", "input_data": {"path": "echo", "amount": amount}},
        format="json",
    )
    assert pending.status_code == 202 and pending.json()["status"] == "pending_approval"
    execution_id = pending.json()["id"]
    return execution_id, Approval.objects.get(execution_id=execution_id)


def _rewrite(execution_id, approval, amount) -> None:
    """Arguments, their hash and the approval's hash rewritten to agree, as a DBA could."""
    forged = {"path": "echo", "amount": amount}
    digest = input_hash(forged)
    tamper(
        "UPDATE executions_execution SET input_data = %s, input_hash = %s WHERE id = %s",
        [json.dumps(forged), digest, execution_id],
    )
    tamper("UPDATE executions_approval SET input_hash = %s WHERE id = %s", [digest, approval.pk])


def _approve(gated, approval):
    return gated["approver"].post(f"/api/v1/approvals/{approval.pk}/approve", {}, format="json")


def _finished(execution_id) -> Execution:
    return wait_for(
        lambda: (e := Execution.objects.get(pk=execution_id)).is_terminal and e, timeout=30
    )


def _refused_and_named(execution_id) -> None:
    refused = Execution.objects.get(pk=execution_id)
    assert refused.status == "denied" and refused.error_type == "integrity_error"
    assert refused.reason_code == "integrity_error" and "input_hash" in refused.error_message
    event = AuditEvent.objects.filter(target_id=execution_id).order_by("-id").first()
    assert event.action == "execution.denied"
    assert event.after["error_type"] == "integrity_error"
    audit_seal_all(grace=timedelta(0))
    report = audit_verify()
    assert not report.ok and report.problem.kind == "record_altered"
    assert execution_id in report.problem.message and "admitted" in report.problem.message


def test_arguments_rewritten_while_a_call_waits_for_approval_cannot_be_approved(gated):
    execution_id, approval = _request(gated, 10)
    _rewrite(execution_id, approval, 999999)
    shown = gated["approver"].get(f"/api/v1/approvals/{approval.pk}").json()
    assert shown["execution"]["input_data"]["amount"] == 999999  # what the row now says
    refused = _approve(gated, approval)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "arguments_changed"
    assert gated["upstream"].requests == []
    _refused_and_named(execution_id)  # closed as denied, recorded
    approval.refresh_from_db()
    assert approval.status == "cancelled" and "input_hash" in approval.reason


def test_a_worker_refuses_an_approved_call_whose_arguments_were_rewritten_in_the_database(
    gated,
):
    from executions.services.pipeline import enqueue

    execution_id, approval = _request(gated, 10)
    honest_id, honest_approval = _request(gated, 1e20)  # jsonb reads 1e20 back as an int
    # Approved while no worker runs: the calls are queued when the rewrite happens.
    assert _approve(gated, approval).status_code == 200
    assert _approve(gated, honest_approval).status_code == 200
    _rewrite(execution_id, approval, 999999)
    with celery_worker():  # it starts with an empty queue: the tasks are sent again
        for pk in (execution_id, honest_id):
            execution = Execution.objects.select_related("tool").get(pk=pk)
            enqueue(execution, execution.tool)
        _finished(execution_id)
        honest = _finished(honest_id)

    assert honest.status == "succeeded", (honest.error_type, honest.error_message)
    sent = gated["upstream"].requests
    assert len(sent) == 1 and "999999" not in sent[0].raw_query + sent[0].text
    _refused_and_named(execution_id)
