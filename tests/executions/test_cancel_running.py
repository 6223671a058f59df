"""Cancelling a call that runs: each executor kind stops its work, and the pipeline records
the call as cancelled by who cancelled it, from REST, MCP and the admin.

The executors against real upstreams (the HTTP upstream, the sandbox, PostgreSQL, SQLite,
the test MCP server, a Python tool), cancelled from another thread as the runner's
watcher does; then calls through a real Celery worker cancelled over the REST API and
from the admin, and the worker free again at once.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.urls import reverse

from executions.executors.base import Cancellation, ErrorType, ToolCall
from executions.executors.command import CommandExecutor
from executions.executors.database import DatabaseExecutor
from executions.executors.http import HTTPExecutor
from executions.executors.mcp import MCPExecutor
from executions.executors.python import PythonExecutor
from executions.models import Execution
from executions.python_tools.registry import ToolRegistry
from registry.models import AuditEvent
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.executions.test_command_sandbox import SH, require_sandbox
from tests.executions.test_database_executor import pg_engine  # noqa: F401 (a fixture)
from tests.executions.test_mcp import ServerProcess, allow_all, make_call
from tests.workers import celery_worker, wait_for

LONG = 30  # seconds each piece of work would take if nothing stopped it


def cancelled_after(executor, call: ToolCall, seconds: float = 1.0):
    """Run ``call``; cancel it ``seconds`` in, from another thread. (result, seconds taken)."""
    timer = threading.Timer(seconds, call.cancellation.set)
    started = time.monotonic()
    timer.start()
    try:
        result = executor.execute(call)
    finally:
        timer.cancel()
    return result, time.monotonic() - started


def tool_call(kind: str, configs: dict, inputs: dict | None = None) -> ToolCall:
    return ToolCall(
        tool_name=f"long_{kind}",
        tool_type=kind,
        configs=configs,
        inputs=inputs or {},
        timeout_seconds=LONG + 10,
        cancellation=Cancellation(),
    )


# --------------------------------------------------------------------------- each executor


def test_a_cancelled_http_request_is_cut_off(upstream, allow_loopback):
    call = tool_call("http", {"base_url": upstream.url, "endpoint": f"/slow/{LONG}"})
    result, took = cancelled_after(HTTPExecutor(), call)
    assert took < 5, took
    assert not result.ok and result.error_type == ErrorType.CONNECTION


def test_a_cancelled_command_has_its_processes_killed(settings):
    settings.TOOLHUB_COMMAND_ALLOWLIST = [SH]
    require_sandbox()
    call = tool_call("command", {"argv": [SH, "-c", f"sleep {LONG}; echo done"]})
    result, took = cancelled_after(CommandExecutor(), call)
    assert took < 5, took
    assert "done" not in str(result.output or "")


@pytest.mark.django_db
def test_a_cancelled_postgresql_query_is_cancelled_on_the_server(pg_engine):  # noqa: F811
    call = tool_call(
        "database",
        {"connection_string": pg_engine.url, "query_template": f"SELECT pg_sleep({LONG})"},
    )
    result, took = cancelled_after(DatabaseExecutor(), call)
    assert took < 5, took
    assert not result.ok
    with psycopg.connect(pg_engine.admin_url, autocommit=True) as conn:
        running = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'"
            " AND state = 'active'"
        ).fetchone()[0]
    assert running == 0  # cancelled on the server, not only abandoned here


def test_a_cancelled_sqlite_statement_is_interrupted(tmp_path, settings):
    database = tmp_path / "long.sqlite3"
    psql_free = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    )
    settings.TOOLHUB_SQLITE_DIRS = [str(tmp_path)]
    import sqlite3

    sqlite3.connect(database).close()
    call = tool_call(
        "database", {"connection_string": f"sqlite:///{database}", "query_template": psql_free}
    )
    result, took = cancelled_after(DatabaseExecutor(), call)
    assert took < 5, took
    assert not result.ok


def test_a_cancelled_mcp_call_is_abandoned_and_the_server_told():
    server = ServerProcess("streamable-http").start()
    try:
        spec = {"name": "web", "transport": "streamable_http", "url": server.url}
        call = make_call(spec, "slow", {"seconds": LONG}, timeout_seconds=LONG + 10)
        call = ToolCall(**{**call.__dict__, "cancellation": Cancellation()})
        result, took = cancelled_after(MCPExecutor(egress_check=allow_all), call)
        assert took < 5, took
        assert not result.ok
        # The session is usable at once: the server was told, the slot is free.
        quick = make_call(spec, "add", {"a": 1, "b": 2})
        assert (
            MCPExecutor(egress_check=allow_all).execute(quick).output["content"][0]["text"] == "3"
        )
    finally:
        server.stop()


def test_a_cancelled_python_call_stops_waiting():
    registry = ToolRegistry()

    @registry.tool
    def nap(seconds: float) -> str:
        """Sleep."""
        time.sleep(seconds)
        return "rested"

    call = tool_call("python", {"function": "nap"}, {"seconds": LONG})
    result, took = cancelled_after(PythonExecutor(registry), call)
    assert took < 5, took
    assert result.error_type == ErrorType.CANCELLED


# --------------------------------------------------------------------------- the pipeline


@pytest.fixture
def long_call(upstream, allow_loopback, owner):
    role = role_services.role_create(actor=None, name="long-callers")
    agent = agent_services.agent_create(
        actor=None, name="long-agent", owner=owner, role_ids=[role.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name="long_fetch",
        type="http",
        timeout_seconds=LONG + 10,
        parameters=[{"name": "seconds", "type": "string", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/slow/{seconds}"},
        ],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return token_client(agent.user), agent


def start(client, seconds) -> str:
    queued = client.post(
        "/api/v1/executions",
        {"tool": "long_fetch", "input_data": {"seconds": str(seconds)}},
        format="json",
    ).json()
    wait_for(lambda: Execution.objects.get(pk=queued["id"]).status == "running", 30)
    return queued["id"]


@pytest.mark.django_db(transaction=True)
def test_a_running_call_cancelled_over_rest_is_recorded_and_its_worker_freed(long_call):
    client, agent = long_call
    with celery_worker(concurrency=1):
        execution_id = start(client, LONG)
        answer = client.post(f"/api/v1/executions/{execution_id}/cancel")
        assert answer.status_code == 200, answer.content
        assert answer.json()["status"] == "cancelled"
        started = time.monotonic()
        # The one worker process is free again: the next call runs within seconds.
        quick = client.post(
            "/api/v1/executions",
            {"tool": "long_fetch", "input_data": {"seconds": "0"}, "wait": 20},
            format="json",
        ).json()
        assert quick["status"] == "succeeded", quick
        assert time.monotonic() - started < 15
    row = Execution.objects.get(pk=execution_id)
    assert row.status == "cancelled" and row.error_type == "cancelled"
    assert agent.user.username in row.error_message
    event = AuditEvent.objects.get(action="execution.cancelled", target_id=execution_id)
    assert event.actor_id == agent.user.pk
    assert row.sealed_secrets == ""
    # A second cancel, or one of a finished call, is a clear conflict.
    again = client.post(f"/api/v1/executions/{execution_id}/cancel")
    assert again.status_code == 409 and again.json()["error"]["code"] == "not_cancellable"


@pytest.mark.django_db(transaction=True)
def test_a_platform_admin_cancels_a_running_call_from_the_admin(long_call, client, superuser):
    api, _ = long_call
    client.force_login(superuser)
    with celery_worker(concurrency=1):
        execution_id = start(api, LONG)
        page = client.post(
            reverse("admin:executions_execution_changelist"),
            {"action": "cancel_calls", "_selected_action": [execution_id]},
            follow=True,
        )
        assert "Cancelled 1 call(s)." in page.content.decode()
        wait_for(lambda: Execution.objects.get(pk=execution_id).status == "cancelled", 5)
    event = AuditEvent.objects.get(action="execution.cancelled", target_id=execution_id)
    assert event.actor_id == superuser.pk
