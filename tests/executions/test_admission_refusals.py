"""A refusal is raised once, by the step of admission that decides it, and recorded on
its way out: the caller is answered with that error naming the record."""

from __future__ import annotations

import pytest

from executions.models import Execution
from executions.services import governance
from executions.services.admission import Admission, Refused, admission_decide
from executions.services.pipeline import execution_request
from registry import snapshot
from registry.models import AuditEvent
from tests.executions.conftest import echo_caller

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world(upstream, allow_loopback, eager_tasks):
    return echo_caller(upstream, "refusals", "refusals_echo")


def decide(world, arguments):
    return admission_decide(
        user=world["agent"].user,
        tool_ref=world["tool"].name,
        arguments=arguments,
        entries=snapshot.resolve(snapshot.UNREAD),
    )


def test_admission_answers_an_admission_and_raises_a_refusal_writing_nothing(world):
    assert isinstance(decide(world, {"path": "echo"}), Admission)
    before = (Execution.objects.count(), AuditEvent.objects.count())
    with pytest.raises(Refused) as refused:
        decide(world, {"path": 5, "surplus": True})
    assert refused.value.refusal.code == "invalid_arguments"
    assert refused.value.refusal.error.extra == {}
    assert (Execution.objects.count(), AuditEvent.objects.count()) == before


def test_the_caller_gets_the_decided_error_naming_its_record_and_the_decision_is_untouched(
    world, monkeypatch
):
    decided = governance.RateLimited("Rate limit reached.", details={"limit": 1})
    decided.headers = {"Retry-After": "7"}

    def limited(**kwargs):
        raise decided

    monkeypatch.setattr(governance, "rate_limit_admit", limited)
    with pytest.raises(governance.RateLimited) as answered:
        execution_request(
            user=world["agent"].user, tool_ref=world["tool"].name, arguments={"path": "echo"}
        )
    error = answered.value
    record = Execution.objects.get(pk=error.extra["execution_id"])
    assert (record.status, record.reason_code) == ("denied", "rate_limited")
    assert AuditEvent.objects.filter(target_id=str(record.pk), action="execution.denied").exists()
    # The same refusal, as decided: code, message, details and headers.
    assert (error.code, error.message, error.details) == (
        "rate_limited",
        "Rate limit reached.",
        {"limit": 1},
    )
    assert error.headers == {"Retry-After": "7"} and error.status_code == 429
    assert decided.extra == {}  # the decision's error was not edited after the fact
