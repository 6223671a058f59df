"""Sending an admitted call to the workers answers what became of it, as a value."""

from __future__ import annotations

import pytest
from django.db import transaction

from executions.models import Execution, ExecutionStatus
from executions.services import dispatch
from executions.services.dispatch import Dispatched
from registry.models import AuditEvent
from registry.services import tools as tool_services

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queued():
    tool = tool_services.tool_create(actor=None, name="dispatched", type="http")
    return Execution.objects.create(
        tool=tool, tool_name=tool.name, tool_type="http", status=ExecutionStatus.QUEUED
    )


def test_a_call_the_broker_took_is_queued_and_left_as_it_is(queued):
    sent = dispatch.dispatch_admitted(queued, queued.tool, publish=lambda e, t: True)
    assert sent is Dispatched.QUEUED
    assert Execution.objects.get(pk=queued.pk).status == ExecutionStatus.QUEUED


def test_a_call_the_broker_did_not_take_is_reported_and_ends_failed_unrun(queued):
    sent = dispatch.dispatch_admitted(queued, queued.tool, publish=lambda e, t: False)
    assert sent is Dispatched.NOT_QUEUED
    stored = Execution.objects.get(pk=queued.pk)
    assert (stored.status, stored.error_type) == ("failed", "queue_unavailable")
    assert AuditEvent.objects.filter(action="execution.failed", target_id=str(queued.pk)).exists()
    # Said by the value returned: the object handed in is not changed behind the caller.
    assert (queued.status, queued.error_type) == (ExecutionStatus.QUEUED, "")
    refusal = dispatch.queue_refusal(queued)
    assert refusal.status_code == 503 and refusal.extra == {"execution_id": str(queued.pk)}


def test_a_call_a_worker_claimed_before_the_publish_failed_stays_the_workers(queued):
    def claimed_meanwhile(execution, tool):
        Execution.objects.filter(pk=execution.pk).update(status=ExecutionStatus.RUNNING)
        return False

    sent = dispatch.dispatch_admitted(queued, queued.tool, publish=claimed_meanwhile)
    assert sent is Dispatched.QUEUED
    assert Execution.objects.get(pk=queued.pk).status == ExecutionStatus.RUNNING


def test_inside_a_transaction_a_call_is_sent_when_it_commits(queued):
    published = []

    def publish(execution, tool):
        published.append(execution.pk)
        return False

    with transaction.atomic():
        sent = dispatch.dispatch_on_commit(queued, queued.tool, publish=publish)
        assert sent is Dispatched.AT_COMMIT and published == []
    assert published == [queued.pk]
    assert Execution.objects.get(pk=queued.pk).error_type == "queue_unavailable"
    # Outside one it is sent at once, and says what became of it.
    again = Execution.objects.create(
        tool=queued.tool, tool_name="dispatched", status=ExecutionStatus.QUEUED
    )
    assert dispatch.dispatch_on_commit(again, again.tool, publish=publish) is Dispatched.NOT_QUEUED
