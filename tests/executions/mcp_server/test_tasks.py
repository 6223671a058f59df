"""Tasks (MCP 2025-11-25): a call run as a task is its execution.

The official TypeScript SDK's experimental tasks client (``tests/node/tasks_client.mjs``)
calls through the live ToolHub (two uvicorn processes, a Celery worker): it creates the
task, polls ``tasks/get`` and reads ``tasks/result``; the answers come from whichever
web process the request reaches, since everything is the execution's record.
"""

from __future__ import annotations

import json
import subprocess
import threading

import pytest

from executions.models import Execution, ExecutionStatus
from tests.executions.mcp_server.conftest import approve_when_pending, latest, rpc
from tests.node_packages import NODE_DIR, require_node

pytestmark = pytest.mark.django_db(transaction=True)


def tasks_client(url: str, token: str, tool: str, arguments: dict, mode: str = "") -> list[dict]:
    require_node("@modelcontextprotocol/sdk", "The tasks tests")
    done = subprocess.run(
        ["node", str(NODE_DIR / "tasks_client.mjs"), url, token, tool, json.dumps(arguments), mode],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_a_call_run_as_a_task_is_its_execution_from_creation_to_result(world):
    lines = tasks_client(world.url, world.token, "alpha", {"path": "task"})
    kinds = [line["type"] for line in lines]
    assert lines[0]["tasks"]["requests"]["tools"]["call"] == {}
    assert lines[1]["execution"] == {"taskSupport": "optional"}
    assert kinds[2] == "taskCreated" and kinds[-2:] == ["result", "final"], kinds
    task_id = lines[2]["task"]["taskId"]
    execution = Execution.objects.get(pk=task_id)
    assert execution.status == ExecutionStatus.SUCCEEDED and execution.tool_name == "alpha"
    assert lines[-1]["task"]["status"] == "completed"
    result = lines[-2]["result"]
    assert result["isError"] is False
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert result["_meta"]["io.toolhub/execution"]["id"] == task_id
    assert "/echo/task" in result["content"][0]["text"]


def test_a_task_waits_for_its_approval_as_working_then_completes(world):
    approver = threading.Thread(target=approve_when_pending, args=(world,))
    approver.start()
    try:
        lines = tasks_client(world.url, world.token, "golf_gated", {"path": "gated"})
    finally:
        approver.join()
    statuses = [line["task"]["status"] for line in lines if line["type"] == "taskStatus"]
    messages = [line["task"].get("statusMessage") for line in lines if line["type"] == "taskStatus"]
    assert statuses[-1] == "completed" and set(statuses) <= {"working", "completed"}, statuses
    assert "waiting for a person's approval" in messages, messages
    assert lines[-2]["type"] == "result" and lines[-2]["result"]["isError"] is False


def test_cancelling_a_task_cancels_its_execution(world):
    lines = tasks_client(world.url, world.token, "golf_gated", {"path": "never"}, "cancel")
    cancelled = next(line for line in lines if line["type"] == "cancelled")
    assert cancelled["task"]["status"] == "cancelled"
    execution = Execution.objects.get(pk=cancelled["task"]["taskId"])
    assert execution.status == ExecutionStatus.CANCELLED
    assert lines[-1]["task"]["status"] == "cancelled"
    assert any(line["type"] == "error" and "cancelled" in line["message"] for line in lines)


def test_another_callers_task_is_unknown_and_a_plain_call_stays_a_call(world, owner):
    from registry.services import agents as agent_services
    from tests.factories import make_token

    lines = tasks_client(world.url, world.token, "alpha", {"path": "mine"})
    task_id = lines[2]["task"]["taskId"]
    other = agent_services.agent_create(actor=None, name="other-agent", owner=owner)
    other_token = make_token(other.user)
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        _, answers = rpc(world.url, other_token, method, {"taskId": task_id})
        assert answers[-1]["error"]["code"] == -32602, (method, answers)
        assert answers[-1]["error"]["message"] == f"Unknown task: {task_id}"
    # Without "task", tools/call answers with the result itself (the 2025-11-25 handshake
    # is the SDK's own: rpc sends no session, as a stateless client may).
    _, answers = rpc(
        world.url, world.token, "tools/call", {"name": "alpha", "arguments": {"path": "x"}}
    )
    assert "content" in answers[-1]["result"] and "task" not in answers[-1]["result"]
    assert latest(tool_name="alpha").status == ExecutionStatus.SUCCEEDED


def person_token(world, person, client_name: str, scopes: list[str]) -> str:
    """An access token of an OAuth client acting for ``person`` at /mcp (with the consent
    the consent page would have left behind)."""
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.models import AccessToken, Application, set_token_value

    from registry.oauth.tokens import access_token
    from registry.services import consents as consent_services

    client = Application.objects.create(
        name=client_name,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/callback",
    )
    consent_services.consent_give(person=person, client=client, resource=world.url, scopes=scopes)
    token = AccessToken(
        user=person,
        application=client,
        expires=timezone.now() + timedelta(hours=1),
        scope=" ".join(scopes),
        resource=[world.url],
    )
    raw = access_token(None)
    set_token_value(token, raw)
    token.save()
    return raw


def test_an_oauth_client_sees_only_the_tasks_it_made_and_needs_tools_call(world):
    """As at the REST API: a client acting for a person owns only the calls it made for
    them, and reading or cancelling a task is ``tools:call``."""
    from tests.factories import make_user

    person = make_user("tess-person")
    person.groups.add(world.role)
    desk = person_token(world, person, "Desk assistant", ["tools:read", "tools:call"])
    other = person_token(world, person, "Other assistant", ["tools:read", "tools:call"])
    reader = person_token(world, person, "Reader", ["tools:read"])

    lines = tasks_client(world.url, desk, "alpha", {"path": "desk"})
    task_id = lines[2]["task"]["taskId"]
    assert lines[-1]["task"]["status"] == "completed"
    _, mine = rpc(world.url, desk, "tasks/get", {"taskId": task_id})
    assert mine[-1]["result"]["taskId"] == task_id
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        _, answers = rpc(world.url, other, method, {"taskId": task_id})
        assert answers[-1]["error"]["message"] == f"Unknown task: {task_id}", (method, answers)
        response, _ = rpc(world.url, reader, method, {"taskId": task_id})
        assert response.status_code == 403 and "tools:call" in response.text, method


MODERN = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def modern(world, method: str, params: dict, *, takes_tasks: bool = True) -> dict:
    """One 2026-07-28 request (its client capabilities naming the tasks extension or
    not); the JSON-RPC answer."""
    capabilities = {"extensions": {TASKS_EXTENSION: {}}} if takes_tasks else {}
    body = {
        **params,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "tasks-2026", "version": "1"},
        },
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    _, answers = rpc(world.url, world.token, method, body, headers=headers)
    return answers[-1]


def acknowledged(answer: dict) -> bool:
    """An empty acknowledgement (the SDK adds its server's name under ``_meta``)."""
    result = answer.get("result") or {}
    return result.get("resultType") == "complete" and set(result) <= {"resultType", "_meta"}


def poll(world, task_id: str, until: str, timeout: float = 30.0) -> dict:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = modern(world, "tasks/get", {"taskId": task_id})["result"]
        if task["status"] == until:
            return task
        time.sleep(0.3)
    raise AssertionError(f"task {task_id} never became {until}")


def test_the_tasks_extension_answers_a_call_that_waits_for_a_person_with_its_task(world):
    from executions.models import Approval
    from executions.services.approvals import approval_decide

    discovered = modern(world, "server/discover", {})["result"]
    assert TASKS_EXTENSION in discovered["capabilities"]["extensions"]

    created = modern(world, "tools/call", {"name": "golf_gated", "arguments": {"path": "m"}})
    assert "result" in created, created
    task = created["result"]
    assert task["resultType"] == "task" and task["status"] == "working", task
    assert task["statusMessage"] == "waiting for a person's approval" and task["ttlMs"] is None
    execution = Execution.objects.get(pk=task["taskId"])
    assert execution.status == ExecutionStatus.PENDING_APPROVAL
    got = modern(world, "tasks/get", {"taskId": task["taskId"]})["result"]
    assert got["resultType"] == "complete" and got["status"] == "working" and "result" not in got
    update = {"taskId": task["taskId"], "inputResponses": {}}
    assert acknowledged(modern(world, "tasks/update", update))

    approval_decide(
        actor=world.approver, approval=Approval.objects.get(execution=execution), approve=True
    )
    done = poll(world, task["taskId"], "completed")
    assert done["result"]["isError"] is False and "/echo/m" in done["result"]["content"][0]["text"]

    # Cancelled: an empty acknowledgement, then the task says so.
    second = modern(world, "tools/call", {"name": "golf_gated", "arguments": {"path": "n"}})
    second_id = second["result"]["taskId"]
    assert acknowledged(modern(world, "tasks/cancel", {"taskId": second_id}))
    assert poll(world, second_id, "cancelled")["status"] == "cancelled"
    assert Execution.objects.get(pk=second_id).status == ExecutionStatus.CANCELLED


def test_a_2026_client_that_does_not_take_tasks_keeps_the_approval_rounds(world):
    answer = modern(
        world, "tools/call", {"name": "golf_gated", "arguments": {"path": "o"}}, takes_tasks=False
    )
    assert answer["result"]["resultType"] == "input_required", answer
    finished = modern(world, "tools/call", {"name": "alpha", "arguments": {"path": "p"}})
    assert "content" in finished["result"] and finished["result"].get("resultType") != "task"
