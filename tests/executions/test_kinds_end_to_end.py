"""Every kind of tool through the whole pipeline and a real Celery worker.

A database tool (PostgreSQL), MCP tools over streamable HTTP and over stdio,
and a Python tool: registered, granted, called over the API with ``wait`` and
run by a worker process.
"""

from __future__ import annotations

import sys

import pytest

from executions.mcp_sync import mcp_server_sync
from executions.python_sync import python_tools_sync
from registry.models import Tool
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import mcp as mcp_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.executions.test_mcp import SERVER_SCRIPT, ServerProcess
from tests.workers import _database_url, celery_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def tool_role():
    """The URL of a login role without superuser rights (what database tools may
    connect as) on another database of the test server."""
    import uuid
    from urllib.parse import urlsplit

    import psycopg

    name = f"toolhub_e2e_{uuid.uuid4().hex[:10]}"
    admin = _database_url().rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{name}" LOGIN')
    server = urlsplit(admin)
    yield f"postgres://{name}@{server.hostname}:{server.port or 5432}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP ROLE IF EXISTS "{name}"')


@pytest.fixture
def caller(allow_loopback, settings, owner):
    settings.TOOLHUB_MCP_STDIO_COMMANDS = [sys.executable]
    role = role_services.role_create(actor=None, name="callers")
    agent = agent_services.agent_create(
        actor=None, name="e2e-agent", owner=owner, role_ids=[role.pk]
    )
    return {"client": token_client(agent.user), "role": role}


def grant(caller, tool: Tool) -> None:
    grant_services.grant_create(actor=None, role=caller["role"], action="execute", tool=tool)


def run(client, tool: str, arguments: dict) -> dict:
    response = client.post(
        "/api/v1/executions", {"tool": tool, "input_data": arguments, "wait": 30}, format="json"
    )
    assert response.status_code == 200, response.json()
    return response.json()


def test_every_kind_runs_through_a_real_worker(caller, tool_role):
    client = caller["client"]
    db_tool = tool_services.tool_create(
        actor=None,
        name="double_it",
        type="database",
        parameters=[{"name": "n", "type": "integer", "required": True}],
        configs=[
            {
                # Another database of the same server (ToolHub's own is refused to
                # tools), as a role without superuser rights (superusers are refused).
                "config_key": "connection_string",
                "config_value": tool_role,
                "is_secret": True,
            },
            {
                "config_key": "query_template",
                "config_value": "SELECT CAST(:n AS integer) * 2 AS doubled",
            },
        ],
    )
    grant(caller, db_tool)
    python_tools_sync(actor=None)
    grant(caller, Tool.objects.get(name="calculator"))
    http_server = ServerProcess("streamable-http").start()
    try:
        http = mcp_services.mcp_server_create(
            actor=None, name="mathhttp", transport="streamable_http", url=http_server.url
        )
        stdio = mcp_services.mcp_server_create(
            actor=None,
            name="mathstdio",
            transport="stdio",
            command=sys.executable,
            args=[str(SERVER_SCRIPT), "--transport", "stdio"],
        )
        for server in (http, stdio):
            report = mcp_server_sync(actor=None, server=server)
            assert not getattr(report, "error", None), report
            grant(caller, Tool.objects.get(name=f"{server.name}__add"))

        with celery_worker(extra_env={"TOOLHUB_MCP_STDIO_COMMANDS": sys.executable}):
            db = run(client, "double_it", {"n": "21"})
            assert db["status"] == "succeeded", db
            assert db["output_data"]["rows"] == [[42]] and db["output_data"]["columns"] == [
                "doubled"
            ]
            assert "postgres://" not in str(db)

            calc = run(client, "calculator", {"expression": "2 + 3 * 4"})
            assert calc["status"] == "succeeded", calc
            assert "14" in str(calc["output_data"])

            for name in ("mathhttp__add", "mathstdio__add"):
                result = run(client, name, {"a": 2, "b": 40})
                assert result["status"] == "succeeded", result
                assert "42" in str(result["output_data"]), result
                assert result["tool_name"] == name
    finally:
        http_server.stop()
