"""The production path: PostgreSQL, the Redis broker and a real Celery worker process."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from executions.models import Execution
from executions.services.runner import executions_reap
from registry.models import AuditEvent
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.factories import make_user
from tests.workers import celery_worker, kill_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def setup(upstream, allow_loopback):
    owner = make_user("owner")
    role = role_services.role_create(actor=None, name="callers")
    agent = agent_services.agent_create(actor=None, name="agent-w", owner=owner, role_ids=[role.pk])
    nobody = agent_services.agent_create(actor=None, name="agent-n", owner=owner)
    tool = tool_services.tool_create(
        actor=None,
        name="upstream_call",
        type="http",
        timeout_seconds=10,
        parameters=[
            {"name": "path", "type": "string", "required": True},
            {"name": "arg", "type": "string", "default": "x"},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}/{arg}"},
        ],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    grant_services.grant_create(
        actor=None, role=role_services.role_create(actor=None, name="r"), action="read", tool=tool
    )
    nobody.user.groups.add(role_services.role_create(actor=None, name="readonly"))
    return {
        "client": token_client(agent.user),
        "tool": tool,
        "nobody": token_client(nobody.user),
        "upstream": upstream,
    }


def test_async_and_wait_through_a_real_worker(setup):
    client = setup["client"]
    with celery_worker():
        queued = client.post(
            "/api/v1/executions",
            {"tool": "upstream_call", "input_data": {"path": "echo"}},
            format="json",
        )
        assert queued.status_code == 202 and queued.json()["status"] == "queued"
        execution_id = queued.json()["id"]
        done = wait_for(
            lambda: (
                (r := client.get(f"/api/v1/executions/{execution_id}").json())["status"]
                == "succeeded"
                and r
            )
        )
        assert done["output_data"]["data"]["path"] == "/echo/x"
        waited = client.post(
            "/api/v1/executions",
            {"tool": "upstream_call", "input_data": {"path": "slow", "arg": "0.3"}, "wait": True},
            format="json",
        )
        assert waited.status_code == 200, waited.json()
        assert waited.json()["status"] == "succeeded", waited.json()
        assert waited.json()["output_data"]["data"] == {"slept": 0.3}
        # Audit events written by the worker carry the admitting request's id.
        events = AuditEvent.objects.filter(target_id=waited.json()["id"]).order_by("id")
        assert [e.action for e in events] == ["execution.queued", "execution.succeeded"]
        assert len({e.request_id for e in events}) == 1
    # An agent without execute cannot run it, worker or not.
    refused = setup["nobody"].post(
        "/api/v1/executions",
        {"tool": "upstream_call", "input_data": {"path": "echo"}},
        format="json",
    )
    assert refused.status_code == 404


def test_killed_worker_never_leaves_an_execution_running(setup):
    client = setup["client"]
    with celery_worker() as proc:
        queued = client.post(
            "/api/v1/executions",
            {"tool": "upstream_call", "input_data": {"path": "slow", "arg": "5"}},
            format="json",
        ).json()
        wait_for(lambda: Execution.objects.get(pk=queued["id"]).status == "running")
        kill_worker(proc)
    execution = Execution.objects.get(pk=queued["id"])
    assert execution.status == "running"
    # Before its deadline the reaper leaves it alone; after, it ends it as worker_lost.
    assert executions_reap()["failed"] == 0
    result = executions_reap(now=execution.deadline_at + timedelta(seconds=1))
    assert result["failed"] == 1
    execution.refresh_from_db()
    assert execution.status == "failed" and execution.error_type == "worker_lost"
    assert AuditEvent.objects.filter(target_id=queued["id"], action="execution.failed").exists()
    # A late redelivery of the task changes nothing.
    from executions.services.runner import execution_run

    assert execution_run(execution_id=queued["id"]) is None


def test_lost_task_is_requeued_and_runs(setup, eager_tasks):
    client = setup["client"]
    eager_tasks.conf.task_always_eager = False
    queued = client.post(
        "/api/v1/executions",
        {"tool": "upstream_call", "input_data": {"path": "echo"}},
        format="json",
    ).json()
    from toolhub.celery import app

    app.control.purge()  # the message is lost (e.g. a broker restart without persistence)
    Execution.objects.filter(pk=queued["id"]).update(
        queued_at=timezone.now() - timedelta(minutes=5)
    )
    with celery_worker():
        row = Execution.objects.get(pk=queued["id"])
        assert executions_reap()["requeued"] == 1, (row.status, row.queued_at, timezone.now())
        # The pool's first task on a machine the rest of the suite keeps busy: allow a minute.
        wait_for(lambda: Execution.objects.get(pk=queued["id"]).status == "succeeded", 60)


def test_worker_recovers_after_its_database_connection_is_cut(setup):
    from django.db import connection

    client = setup["client"]
    body = {"tool": "upstream_call", "input_data": {"path": "echo"}, "wait": 20}
    with celery_worker(concurrency=1):
        assert (
            client.post("/api/v1/executions", body, format="json").json()["status"] == "succeeded"
        )
        with connection.cursor() as cursor:  # a database restart, as the worker sees it
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        after = client.post("/api/v1/executions", body, format="json").json()
        assert after["status"] == "succeeded", after
