"""Every executor kind: a secret the tool echoes never outlives the runner's one redaction.

For each kind, a tool that uses a secret answers with it (the raw result), fails
with it in its message (an upstream error, a driver's exception, a raised
exception, a program's stderr), and its executor raises with it after the call
(an executor's crash). In each case the secret, in the forms an upstream echoes
it in, is in none of: the API's answer, the execution as read back, the row, the
audit events, the log lines.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
import uuid
from urllib.parse import urlsplit

import pytest

from executions.executors import get_executor
from executions.models import Execution
from executions.python_sync import python_tools_sync
from executions.python_tools import registry as default_registry
from executions.services.runner import attempts
from registry.models import AuditEvent
from registry.services import mcp as mcp_services
from registry.services import tools as tool_services
from registry.services.agents import agent_create
from registry.services.grants import grant_create
from registry.services.roles import role_create
from tests.conftest import token_client
from tests.executions.test_command_sandbox import PYTHON, require_sandbox
from tests.executions.test_kinds_end_to_end import tool_role  # noqa: F401 (a fixture)
from tests.executions.test_mcp import SERVER_SCRIPT

pytestmark = [pytest.mark.django_db(transaction=True)]

# Mixed case and long enough for every form (re-cased, base64) to be looked for.
SECRET = f"Once-Secret-{uuid.uuid4().hex[:16]}-XyZ"
VENDOR_VARIABLE = "TOOLHUB_TEST_VENDOR_KEY"


def forms(secret: str = SECRET) -> list[str]:
    return [secret, secret.upper(), secret.lower(), base64.b64encode(secret.encode()).decode()]


def secret_config(key: str, value) -> dict:
    return {"config_key": key, "config_value": value, "is_secret": True}


# --------------------------------------------------------------------------- one pair of tools per kind


def http_tools(request) -> tuple:
    upstream = request.getfixturevalue("upstream")
    request.getfixturevalue("allow_loopback")

    def tool(name: str, status: int):
        return tool_services.tool_create(
            actor=None,
            name=name,
            type="http",
            timeout_seconds=5,
            configs=[
                {"config_key": "base_url", "config_value": upstream.url},
                {
                    "config_key": "endpoint",
                    "config_value": f"/echo-header/X-API-Key?status={status}",
                },
                {"config_key": "auth_type", "config_value": "api_key"},
                secret_config("api_key", SECRET),
            ],
        )

    return tool("http_echoes", 200), tool("http_fails", 500)


def database_tools(request) -> tuple:
    request.getfixturevalue("allow_loopback")
    role_url = urlsplit(request.getfixturevalue("tool_role"))
    # Trust authentication ignores the password; the database echoes it from the query.
    url = f"postgres://{role_url.username}:{SECRET}@{role_url.hostname}:{role_url.port}/postgres"

    def tool(name: str, query: str):
        return tool_services.tool_create(
            actor=None,
            name=name,
            type="database",
            configs=[
                secret_config("connection_string", url),
                secret_config("query_template", query),
            ],
        )

    return (
        tool("db_echoes", f"SELECT '{SECRET}' AS said, encode('{SECRET}', 'base64') AS b64"),
        # The driver's exception quotes the value it could not read.
        tool("db_fails", f"SELECT CAST('{SECRET}' AS integer) AS n"),
    )


def mcp_tools(request) -> tuple:
    settings = request.getfixturevalue("settings")
    settings.TOOLHUB_MCP_STDIO_COMMANDS = [sys.executable]

    def tool(name: str, args: list[str], remote: str):
        server = mcp_services.mcp_server_create(
            actor=None,
            name=name,
            transport="stdio",
            command=sys.executable,
            args=args,
            env={"VENDOR_TOKEN": SECRET},
        )
        return tool_services.tool_create(
            actor=None,
            name=f"{name}__{remote}",
            type="mcp",
            parameters=[{"name": "env", "type": "string"}, {"name": "form", "type": "string"}],
            configs=[
                {"config_key": "server_id", "config_value": str(server.pk)},
                {"config_key": "remote_tool_name", "config_value": remote},
            ],
        )

    complains = (
        "import os, sys; sys.stderr.write('refused ' + os.environ['VENDOR_TOKEN']); sys.exit(3)"
    )
    return (
        tool("echoes", [str(SERVER_SCRIPT), "--transport", "stdio"], "whoami"),
        tool("complains", ["-c", complains], "whoami"),
    )


def python_tools(request) -> tuple:
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv(VENDOR_VARIABLE, SECRET)  # what the function reads its key from

    @default_registry.tool(name="vendor_echoes")
    def vendor_echoes() -> dict:
        import os

        key = os.environ[VENDOR_VARIABLE]
        return {"key": key, "shouted": key.upper()}

    @default_registry.tool(name="vendor_fails")
    def vendor_fails() -> dict:
        import os

        raise PermissionError(f"vendor refused key {os.environ[VENDOR_VARIABLE]}")

    request.addfinalizer(lambda: default_registry.unregister("vendor_echoes"))
    request.addfinalizer(lambda: default_registry.unregister("vendor_fails"))
    python_tools_sync(actor=None)

    def tool(name: str):
        # The key the function uses is the tool's secret config: what the runner redacts.
        return tool_services.tool_create(
            actor=None,
            name=f"{name}_tool",
            type="python",
            configs=[
                {"config_key": "function", "config_value": name},
                secret_config("vendor_key", SECRET),
            ],
        )

    return tool("vendor_echoes"), tool("vendor_fails")


def command_tools(request) -> tuple:
    require_sandbox()
    request.getfixturevalue("settings").TOOLHUB_COMMAND_ALLOWLIST = [PYTHON]

    def tool(name: str, code: str):
        return tool_services.tool_create(
            actor=None,
            name=name,
            type="command",
            configs=[
                {"config_key": "argv", "config_value": [PYTHON, "-c", code]},
                secret_config("env", {"API_TOKEN": SECRET}),
            ],
        )

    read = "import os, sys; t = os.environ['API_TOKEN']"
    return (
        tool("cmd_echoes", f"{read}; print(t); print(t.upper())"),
        tool("cmd_fails", f"{read}; sys.stderr.write('refused ' + t); sys.exit(3)"),
    )


KINDS = {
    "http": (http_tools, {}),
    "database": (database_tools, {}),
    "mcp": (mcp_tools, {"env": "VENDOR_TOKEN", "form": "base64"}),
    "python": (python_tools, {}),
    "command": (command_tools, {}),
}


# --------------------------------------------------------------------------- the checks


@pytest.fixture
def caller(owner, reviewer_client):
    role = role_create(actor=None, name="once-callers")
    agent = agent_create(actor=None, name="agent-once", owner=owner, role_ids=[role.pk])
    return {"client": token_client(agent.user), "role": role, "reviewer": reviewer_client}


def run(caller, tool, arguments: dict):
    grant_create(actor=None, role=caller["role"], action="execute", tool=tool)
    response = caller["client"].post(
        "/api/v1/executions",
        {"tool": tool.name, "input_data": arguments, "wait": 30},
        format="json",
    )
    assert response.status_code == 200, response.content
    return response


def assert_nowhere(caller, response, caplog) -> dict:
    """The secret is in none of the answer, the execution read back, the rows, the
    audit events and the log lines; the execution as answered is returned."""
    body = response.json()
    read_back = caller["client"].get(f"/api/v1/executions/{body['id']}")
    as_reviewer = caller["reviewer"].get(f"/api/v1/executions/{body['id']}")
    assert read_back.status_code == as_reviewer.status_code == 200
    texts = {
        "answer": response.content.decode(),
        "read back": read_back.content.decode() + as_reviewer.content.decode(),
        "rows": json.dumps(list(Execution.objects.values()), default=str),
        "audit": json.dumps(list(AuditEvent.objects.values()), default=str),
        "logs": caplog.text
        + "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records),
    }
    assert AuditEvent.objects.filter(target_id=body["id"]).exists()
    for leak in forms():
        for where, text in texts.items():
            assert leak not in text, f"{leak!r} found in {where}"
    return body


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_secret_the_tool_answers_with_is_redacted_everywhere(
    kind, caller, request, caplog, eager_tasks
):
    make, arguments = KINDS[kind]
    echoes, _ = make(request)
    caplog.set_level(logging.DEBUG)
    body = assert_nowhere(caller, run(caller, echoes, arguments), caplog)
    assert body["status"] == "succeeded", body
    assert "[REDACTED]" in json.dumps(body["output_data"])  # the tool did answer with it


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_secret_the_tool_fails_with_is_redacted_everywhere(
    kind, caller, request, caplog, eager_tasks
):
    make, arguments = KINDS[kind]
    _, fails = make(request)
    caplog.set_level(logging.DEBUG)
    body = assert_nowhere(caller, run(caller, fails, arguments), caplog)
    assert body["status"] == "failed", body
    assert "[REDACTED]" in body["error_message"], body  # the message did quote it


class _RaisesAfterwards:
    """The kind's executor, raising after the call with everything the tool answered in
    the exception's message (as an executor's bug would: a message quoting a response)."""

    def __init__(self, executor):
        self.executor = executor
        self.kind = executor.kind

    def execute(self, call):
        result = self.executor.execute(call)
        shown = json.dumps(result.output, default=str)
        raise RuntimeError(f"executor failed on {shown} {result.error_message or ''}")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_secret_in_an_executors_exception_is_redacted_everywhere(
    kind, caller, request, caplog, monkeypatch, eager_tasks
):
    make, arguments = KINDS[kind]
    echoes, _ = make(request)
    monkeypatch.setattr(attempts, "get_executor", lambda k: _RaisesAfterwards(get_executor(k)))
    caplog.set_level(logging.DEBUG)
    body = assert_nowhere(caller, run(caller, echoes, arguments), caplog)
    assert body["status"] == "failed" and body["error_type"] == "tool_error", body
    assert "[REDACTED]" in body["error_message"], body
    assert "executor crashed" in caplog.text  # logged, with the traceback redacted


@pytest.mark.slow
def test_a_worker_process_redacts_as_the_calling_process_does(caller, request, caplog, monkeypatch):
    """The worker path: the same calls run by a Celery worker process hold the secret
    nowhere either (its log lines are its own process's: not read here)."""
    from executions.services.runner import run as runner_run
    from tests.workers import celery_worker

    def not_here(*args, **kwargs):
        raise AssertionError("run in the calling process, not by the worker")

    monkeypatch.setattr(runner_run, "run_with_retries", not_here)
    echoes, fails = http_tools(request)
    with celery_worker():
        answered = assert_nowhere(caller, run(caller, echoes, {}), caplog)
        failed = assert_nowhere(caller, run(caller, fails, {}), caplog)
    assert answered["status"] == "succeeded" and "[REDACTED]" in json.dumps(answered)
    assert failed["status"] == "failed" and "[REDACTED]" in failed["error_message"]
