"""Secrets a call uses without being the tool's configs never reach the caller, in any form.

An MCP server's bearer token and stdio environment, and the password of an
operator's database alias, are used by the call but are not secret configs of
the tool. An upstream may echo them re-cased or base64-encoded (``BEARER
<TOKEN>``, ``base64("Bearer <token>")``). The runner's one redaction receives
every secret the call used and removes all those forms from the execution,
the API, the exports and the database.
"""

from __future__ import annotations

import base64
import json
import sys
import uuid
from urllib.parse import urlsplit

import pytest
from django.db import connection

from executions.models import Execution
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import mcp as mcp_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.executions.test_mcp import SERVER_SCRIPT, ServerProcess
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True)]

# Mixed case, so that its upper- and lower-cased forms differ from it.
TOKEN = f"Lent-Token-{uuid.uuid4().hex[:16]}-XyZ"
ENV_VALUE = f"Lent-Env-{uuid.uuid4().hex[:16]}-XyZ"
PASSWORD = f"Lent-Pw-{uuid.uuid4().hex[:16]}-XyZ"


def forms(secret: str, echoed: str | None = None) -> list[str]:
    """The secret as a careless upstream may echo it: as is, re-cased, base64 of what held it."""
    echoed = echoed or secret
    return [
        secret,
        secret.upper(),
        secret.lower(),
        base64.b64encode(echoed.encode()).decode(),
    ]


@pytest.fixture
def callers(db, allow_loopback, eager_tasks, reviewer_client):
    owner = make_user("owner-lena")
    role = role_services.role_create(actor=None, name="lent-callers")
    agent = agent_services.agent_create(
        actor=None, name="agent-lent", owner=owner, role_ids=[role.pk]
    )
    return {"client": token_client(agent.user), "role": role, "reviewer": reviewer_client}


def run_everywhere(callers, tool, cases: list[dict], leaks: list[str]) -> None:
    """Call ``tool`` with each input of ``cases``; no leak in any response, the rows,
    the executions API or the exports."""
    grant_services.grant_create(actor=None, role=callers["role"], action="execute", tool=tool)
    bodies = []
    for inputs in cases:
        response = callers["client"].post(
            "/api/v1/executions",
            {"tool": tool.name, "input_data": inputs, "wait": 30},
            format="json",
        )
        assert response.status_code == 200, response.content
        assert response.json()["status"] == "succeeded", response.json()
        bodies.append(response.content.decode())
        execution_id = response.json()["id"]
        bodies.append(callers["client"].get(f"/api/v1/executions/{execution_id}").content.decode())
    for fmt in ("jsonl", "csv"):
        export = callers["reviewer"].get(f"/api/v1/executions/export?format={fmt}")
        assert export.status_code == 200
        bodies.append(b"".join(export.streaming_content).decode())
    assert "[REDACTED]" in bodies[0]  # the upstream did echo it
    texts = "\n".join(bodies) + json.dumps(list(Execution.objects.values()), default=str)
    for leak in leaks:
        assert leak not in texts, f"{leak!r} reached the caller"


def test_an_mcp_servers_token_is_redacted_in_every_form_it_is_echoed_in(callers):
    upstream = ServerProcess("streamable-http", "--token", TOKEN).start()
    try:
        server = mcp_services.mcp_server_create(
            actor=None, name="echoes", transport="streamable_http", url=upstream.url,
            auth_token=TOKEN,
        )  # fmt: skip
        tool = tool_services.tool_create(
            actor=None,
            name="echoes__whoami",
            type="mcp",
            parameters=[{"name": "form", "type": "string"}],
            configs=[{"config_key": "server_id", "config_value": str(server.pk)}],
        )
        cases = [{"form": f} for f in ("plain", "upper", "lower", "base64")]
        run_everywhere(callers, tool, cases, forms(TOKEN, f"Bearer {TOKEN}"))
    finally:
        upstream.stop()


def test_a_stdio_servers_environment_values_are_redacted_in_every_form(callers, settings):
    settings.TOOLHUB_MCP_STDIO_COMMANDS = [f"{sys.executable} {SERVER_SCRIPT}"]
    server = mcp_services.mcp_server_create(
        actor=None,
        name="local",
        transport="stdio",
        command=sys.executable,
        args=[str(SERVER_SCRIPT), "--transport", "stdio"],
        env={"VENDOR_TOKEN": ENV_VALUE},
    )
    tool = tool_services.tool_create(
        actor=None,
        name="local__whoami",
        type="mcp",
        parameters=[{"name": "form", "type": "string"}, {"name": "env", "type": "string"}],
        configs=[{"config_key": "server_id", "config_value": str(server.pk)}],
    )
    cases = [{"form": f, "env": "VENDOR_TOKEN"} for f in ("plain", "upper", "lower", "base64")]
    run_everywhere(callers, tool, cases, forms(ENV_VALUE))


def test_a_value_inside_a_stdio_servers_json_text_environment_value_is_redacted(callers, settings):
    settings.TOOLHUB_MCP_STDIO_COMMANDS = [f"{sys.executable} {SERVER_SCRIPT}"]
    server = mcp_services.mcp_server_create(
        actor=None,
        name="jsonenv",
        transport="stdio",
        command=sys.executable,
        args=[str(SERVER_SCRIPT), "--transport", "stdio"],
        env={"VENDOR_TOKEN": json.dumps({"region": "eu", "token": ENV_VALUE})},
    )
    tool = tool_services.tool_create(
        actor=None,
        name="jsonenv__whoami",
        type="mcp",
        parameters=[
            {"name": "form", "type": "string"},
            {"name": "env", "type": "string"},
            {"name": "field", "type": "string"},
        ],
        configs=[{"config_key": "server_id", "config_value": str(server.pk)}],
    )
    cases = [
        {"form": f, "env": "VENDOR_TOKEN", "field": "token"}
        for f in ("plain", "upper", "lower", "base64")
    ]
    run_everywhere(callers, tool, cases, forms(ENV_VALUE))


def test_a_database_alias_password_is_redacted_in_every_form(callers, settings):
    db = connection.settings_dict
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    password = db.get("PASSWORD") or PASSWORD  # trust authentication ignores it
    settings.TOOLHUB_DATABASE_ALIASES = {
        "reports": f"postgres://{db.get('USER') or 'postgres'}:{password}@{host}:{port}/postgres"
    }
    assert urlsplit(settings.TOOLHUB_DATABASE_ALIASES["reports"]).password == password
    # The password is in what the database answers (here: the query's own text).
    query = (
        f"SELECT '{password}' AS plain, upper('{password}') AS shouted, "
        f"lower('{password}') AS quiet, encode(convert_to('{password}', 'UTF8'), 'base64') AS b64"
    )
    tool = tool_services.tool_create(
        actor=None,
        name="shout",
        type="database",
        configs=[
            {"config_key": "connection_alias", "config_value": "reports"},
            {"config_key": "query_template", "config_value": query},
        ],
    )
    run_everywhere(callers, tool, [{}], forms(password))
