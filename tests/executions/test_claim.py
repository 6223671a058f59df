"""One claim for every call that runs: a worker's task and a call run where it was
admitted (a waiting HTTP call, decision 0004) go through ``runner.claimed``: the
same checks, one winner, and each concurrency slot released once, however the run ends."""

from __future__ import annotations

import pytest
from django.utils import timezone

from executions.models import Execution, ExecutionStatus
from executions.services import concurrency, pipeline, shared_state
from executions.services.pipeline import execution_request
from executions.services.runner import execution_run
from executions.services.runner.claim import Claim, ClaimOutcome, claimed
from registry.models import AuditEvent
from registry.services import tools as tool_services
from registry.services.agents import agent_create
from registry.services.grants import grant_create
from registry.services.roles import role_create
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_slots_held():
    client = shared_state.redis_client()
    if client is not None:
        for key in client.scan_iter("toolhub:slots:*"):
            client.delete(key)
    shared_state._local_slots.clear()
    yield


@pytest.fixture
def world(upstream, allow_loopback, eager_tasks, settings):
    settings.TOOLHUB_INLINE_WAIT = frozenset({"http"})
    owner = make_user("owner-claim")
    role = role_create(actor=None, name="claim-callers")
    agent = agent_create(actor=None, name="agent-claim", owner=owner, role_ids=[role.pk])
    tool = tool_services.tool_create(
        actor=None,
        name="claim_echo",
        type="http",
        timeout_seconds=1,
        max_retries=0,
        max_concurrency=1,
        parameters=[
            {"name": "path", "type": "string", "required": True},
            {"name": "arg", "type": "string", "default": "x"},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}/{arg}"},
        ],
    )
    grant_create(actor=None, role=role, action="execute", tool=tool)
    return {
        "agent": agent,
        "tool": tool,
        "upstream": upstream,
        "slot": f"toolhub:slots:tool:{tool.pk}",
    }


@pytest.fixture
def queued_only(monkeypatch):
    """Admitted calls stay queued: no worker takes them unless the test runs one."""
    monkeypatch.setattr(pipeline, "enqueue", lambda execution, tool: True)


@pytest.fixture
def slot_ledger(monkeypatch):
    """Every concurrency slot taken and released, as ``(key, holder)``."""
    taken: list[tuple[str, str]] = []
    released: list[tuple[str, str]] = []
    acquire, release = concurrency.acquire_slots, concurrency.release

    def acquire_recorded(holder, tool, lease):
        keys = acquire(holder, tool, lease)
        taken.extend((key, holder) for key in keys or ())
        return keys

    def release_recorded(key, holder):
        released.append((key, holder))
        release(key, holder)

    monkeypatch.setattr(concurrency, "acquire_slots", acquire_recorded)
    monkeypatch.setattr(concurrency, "release", release_recorded)
    return taken, released


def submit(world, path="echo/x", *, wait=True, **kwargs) -> Execution:
    head, arg = path.split("/")
    return execution_request(
        user=world["agent"].user,
        tool_ref=world["tool"].name,
        arguments={"path": head, "arg": arg},
        wait=wait,
        **kwargs,
    )


def actions(execution) -> list[str]:
    return list(
        AuditEvent.objects.filter(target_id=str(execution.pk))
        .order_by("id")
        .values_list("action", flat=True)
    )


def slot_free(world) -> bool:
    key = world["slot"]
    if not shared_state.slot_acquire(key, "next-call", 1, 5):
        return False
    shared_state.slot_release(key, "next-call")
    return True


def test_a_call_claimed_twice_runs_once_and_the_loser_leaves_the_winners_slot(
    world, queued_only, slot_ledger
):
    tool = tool_services.tool_update(actor=None, tool=world["tool"], data={"max_concurrency": 2})
    queued = submit(world, wait=False)
    first, second = (Execution.objects.get(pk=queued.pk) for _ in range(2))  # two tasks' reads
    with claimed(first, tool) as won:
        with claimed(second, tool) as lost:
            assert won.runs and lost.outcome is ClaimOutcome.GONE
        # The loser released its own slot only: the winner's is still counted.
        assert shared_state.slot_acquire(world["slot"], "another-call", 2, 5)
        assert not shared_state.slot_acquire(world["slot"], "a-third-call", 2, 5)
        shared_state.slot_release(world["slot"], "another-call")
    taken, released = slot_ledger
    assert len(taken) == 2 and sorted(released) == sorted(taken)
    assert Execution.objects.get(pk=queued.pk).status == ExecutionStatus.RUNNING


def test_a_second_task_for_a_call_a_worker_ran_does_nothing(world, queued_only):
    queued = submit(world, wait=False)
    assert execution_run(execution_id=queued.pk).status == ExecutionStatus.SUCCEEDED
    assert execution_run(execution_id=queued.pk) is None
    assert len(world["upstream"].requests) == 1
    assert actions(queued) == ["execution.queued", "execution.succeeded"]


OUTCOMES = {  # path called → how the call ends
    "succeeds": ("echo/x", "succeeded", ""),
    "fails": ("status/500", "failed", "upstream_error"),
    "times out": ("slow/3", "failed", "timeout"),
}


@pytest.mark.parametrize("where", ["inline", "worker"])
@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_a_slot_is_released_exactly_once_however_the_run_ends(
    world, queued_only, slot_ledger, where, outcome
):
    path, status, error_type = OUTCOMES[outcome]
    if where == "inline":
        execution = submit(world, path)
        assert actions(execution)[0] == "execution.running"  # claimed in its admission
    else:
        execution = execution_run(execution_id=submit(world, path, wait=False).pk)
        assert actions(execution)[0] == "execution.queued"
    assert (execution.status, execution.error_type) == (status, error_type)
    taken, released = slot_ledger
    assert len(taken) == 1 and released == taken
    assert slot_free(world)


@pytest.mark.parametrize("where", ["inline", "worker"])
def test_a_slot_is_released_exactly_once_when_the_run_raises(
    world, queued_only, slot_ledger, monkeypatch, where
):
    from executions.services.runner import run

    def broken_finish(*args, **kwargs):
        raise RuntimeError("a bug of ours while recording the outcome")

    monkeypatch.setattr(run, "finish", broken_finish)
    if where == "inline":
        execution = submit(world)
        # The web process ends the call it holds (the tool may have run: not again).
        assert (execution.status, execution.error_type) == ("failed", "internal_error")
    else:
        queued = submit(world, wait=False)
        with pytest.raises(RuntimeError):
            execution_run(execution_id=queued.pk)
        # Left running for the reaper, as a worker that died mid-call leaves it.
        assert Execution.objects.get(pk=queued.pk).status == ExecutionStatus.RUNNING
    taken, released = slot_ledger
    assert len(taken) == 1 and released == taken
    assert slot_free(world)


def test_a_slot_is_released_exactly_once_when_the_admission_write_fails(world, slot_ledger):
    def unbindable(execution):
        raise RuntimeError("the idempotency key could not be bound")

    with pytest.raises(RuntimeError):
        submit(world, on_admitted=unbindable)
    taken, released = slot_ledger
    assert len(taken) == 1 and released == taken
    assert slot_free(world) and world["upstream"].requests == []


def test_an_inline_call_at_its_slot_limit_takes_and_releases_nothing(
    world, queued_only, slot_ledger
):
    assert shared_state.slot_acquire(world["slot"], "someone-else", 1, 60)
    execution = submit(world)
    assert execution.status == ExecutionStatus.QUEUED  # left to the workers
    assert slot_ledger == ([], [])
    shared_state.slot_release(world["slot"], "someone-else")


CHANGES = ["tool_inactive", "tool_definition_changed", "agent_inactive"]


def _change(world, tool, change: str) -> None:
    """What may happen to a call between its admission and its claim."""
    if change == "tool_inactive":
        tool.is_active = False
    elif change == "tool_definition_changed":
        tool.quarantined_at = timezone.now()
    else:  # the person the agent answers to left
        owner = world["agent"].owner
        owner.is_active = False
        owner.save(update_fields=["is_active"])


@pytest.mark.parametrize("change", CHANGES)
def test_a_call_being_admitted_is_refused_the_claim_a_queued_one_is(
    world, queued_only, slot_ledger, change
):
    queued = submit(world, wait=False)  # written, with its admission event
    # As admission builds a call it may run here: not written yet.
    admitting = Execution(
        tool=world["tool"],
        tool_name=world["tool"].name,
        agent=world["agent"],
        status=ExecutionStatus.QUEUED,
    )
    tool = world["tool"]
    _change(world, tool, change)
    with claimed(queued, tool) as worker, claimed(admitting, tool) as inline:
        assert worker == inline
        assert worker.outcome is ClaimOutcome.REFUSED and worker.reason == change
    assert isinstance(worker, Claim) and worker.message
    assert admitting.status == queued.status == ExecutionStatus.QUEUED
    assert slot_ledger == ([], [])  # refused before any slot is taken


def test_an_inline_call_the_claim_refuses_is_decided_by_the_workers_and_never_runs(world):
    # Admission does not see the owner leave (a token check does, before it); the claim
    # does: the call goes to the workers, whose claim denies it for the same reason.
    owner = world["agent"].owner
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    execution = submit(world)
    assert execution.status == ExecutionStatus.DENIED
    assert execution.reason_code == "agent_inactive"
    assert actions(execution) == ["execution.queued", "execution.denied"]
    assert world["upstream"].requests == []


def test_a_call_run_where_it_was_admitted_is_admitted_and_started_in_one_write(world):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.conftest import token_client

    if connection.vendor != "postgresql":
        pytest.skip("one statement per write on PostgreSQL")
    client = token_client(world["agent"].user)
    body = {"tool": world["tool"].name, "input_data": {"path": "echo"}, "wait": True}
    assert client.post("/api/v1/executions", body, format="json").status_code == 200  # warm
    with CaptureQueriesContext(connection) as captured:
        response = client.post("/api/v1/executions", body, format="json")
    assert response.status_code == 200 and response.json()["status"] == "succeeded"
    # The registry generation, the row as running with its admission event, the end
    # with its event: the claim reads nothing admission read already.
    statements = [q["sql"].lstrip()[:40] for q in captured.captured_queries]
    assert len(statements) == 3, statements
