"""ToolHub as an MCP server, driven by the official ``mcp`` SDK client over streamable HTTP.

Against a live ToolHub (two uvicorn processes serving ``toolhub.asgi:application``),
PostgreSQL, Redis and a real Celery worker (``conftest.live_toolhub``).
"""

from __future__ import annotations

import asyncio
import socket
import time

import anyio
import httpx2
import pytest
from django.db import close_old_connections
from mcp.shared.exceptions import MCPError

from executions.models import Execution, ExecutionStatus
from registry.models import AuditEvent, Tool, Toolset
from registry.services import guards as guard_services
from registry.services import limits as limit_services
from registry.services import tools as tool_services
from tests.executions.mcp_server.conftest import (
    CANARY,
    EXECUTABLE,
    TRUSTED_ORIGIN,
    approve_when_pending,
    latest,
    mcp_client,
    rpc,
)
from tests.factories import make_token

pytestmark = [pytest.mark.django_db(transaction=True)]


async def all_tools(client) -> tuple[list, int]:
    """Every tool the server lists, following cursors; and how many pages it took."""
    tools, cursor, pages = [], None, 0
    while True:
        page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
        tools += page.tools
        pages += 1
        cursor = page.next_cursor
        if not cursor:
            return tools, pages


# --------------------------------------------------------------------------- tools/list


def test_an_agent_lists_exactly_the_active_tools_it_may_execute_page_by_page(world):
    async def scenario():
        async with mcp_client(world.url, world.token) as client:
            return await all_tools(client)

    tools, pages = asyncio.run(scenario())
    names = {tool.name for tool in tools}
    assert names == EXECUTABLE | {"golf_gated"}  # not the read-only, hidden or inactive ones
    assert pages == 2  # two per page (TOOLHUB_MCP_PAGE_SIZE) for four tools
    alpha = next(tool for tool in tools if tool.name == "alpha")
    assert alpha.input_schema["required"] == ["path"]
    assert alpha.output_schema["properties"]["method"]["type"] == "string"
    assert alpha.title == "Alpha"
    assert alpha.annotations.read_only_hint is True
    assert alpha.annotations.destructive_hint is False


def test_a_cursor_the_server_did_not_give_is_a_protocol_error(world):
    async def scenario():
        async with mcp_client(world.url, world.token) as client:
            with pytest.raises(MCPError) as raised:
                await client.list_tools(cursor="not-a-cursor")
            return raised.value

    error = asyncio.run(scenario())
    assert error.code == -32602
    assert "cursor" in error.message


# --------------------------------------------------------------------------- tools/call


def test_a_call_runs_on_the_worker_and_is_recorded_as_an_mcp_call(world):
    async def scenario():
        async with mcp_client(world.url, world.token) as client:
            return await client.call_tool("alpha", {"path": "from-mcp"})

    result = asyncio.run(scenario())
    assert result.is_error is False
    assert result.structured_content["data"]["path"] == "/echo/from-mcp"
    assert '"method": "GET"' in result.content[0].text
    execution = latest(tool=world.tools["alpha"])
    assert execution.status == ExecutionStatus.SUCCEEDED
    assert str(execution.pk) == result.meta["io.toolhub/execution"]["id"]
    assert execution.worker  # a Celery worker ran it
    assert (execution.entry_point, execution.client_name, execution.client_version) == (
        "mcp",
        "toolhub-tests",
        "9.9",
    )
    assert execution.protocol_version == "2025-11-25"
    assert execution.request_id
    actions = set(
        AuditEvent.objects.filter(target_id=str(execution.pk)).values_list("action", flat=True)
    )
    assert {"execution.queued", "execution.succeeded"} <= actions


def test_arguments_that_do_not_match_come_back_as_a_tool_error_with_each_problem(world):
    async def scenario():
        async with mcp_client(world.url, world.token) as client:
            return await client.call_tool("alpha", {"path": [5], "colour": "red"})

    result = asyncio.run(scenario())
    assert result.is_error is True
    error = result.structured_content["error"]
    assert error["code"] == "invalid_arguments"
    problems = {problem["path"]: problem for problem in error["details"]}
    assert set(problems) == {"path", "colour"}
    assert problems["path"]["expected"] == "string"
    assert all({"path", "message", "expected"} <= set(p) for p in problems.values())
    execution = latest(pk=error["execution_id"])
    assert (execution.status, execution.entry_point) == (ExecutionStatus.INVALID, "mcp")


def test_a_rate_limited_call_is_a_tool_error_saying_when_to_retry(world):
    limit_services.rate_limit_create(
        actor=None, tool=world.tools["bravo"], scope="agent", max_requests=1, time_window_seconds=60
    )

    async def scenario():
        async with mcp_client(world.url, world.token) as client:
            first = await client.call_tool("bravo", {"path": "1"})
            second = await client.call_tool("bravo", {"path": "2"})
            return first, second

    first, second = asyncio.run(scenario())
    assert first.is_error is False
    assert second.is_error is True
    error = second.structured_content["error"]
    assert error["code"] == "rate_limited"
    assert 0 < error["retry_after_seconds"] <= 60
    assert "Retry in" in second.content[0].text
    refused = latest(pk=error["execution_id"])
    assert (refused.status, refused.reason_code) == (ExecutionStatus.DENIED, "rate_limited")


def test_a_call_a_guard_denies_is_a_tool_error_the_model_can_act_on(world):
    guard_services.guard_create(
        actor=None,
        tool=world.tools["bravo"],
        name="no-admin-paths",
        kind="arguments",
        action="deny",
        config={
            "condition": {"properties": {"path": {"pattern": "^admin"}}, "required": ["path"]},
            "message": "Admin pages are off limits: ask for a public path.",
        },
    )

    async def scenario():
        async with mcp_client(world.url, world.token) as client:
            return await client.call_tool("bravo", {"path": "admin/users"})

    result = asyncio.run(scenario())
    assert result.is_error is True
    error = result.structured_content["error"]
    assert error["code"] == "guard_denied"
    assert "no-admin-paths: Admin pages are off limits" in result.content[0].text
    refused = latest(pk=error["execution_id"])
    assert (refused.status, refused.reason_code) == (ExecutionStatus.DENIED, "guard_denied")
    assert refused.entry_point == "mcp"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("echo_hidden", "Unknown tool: echo_hidden"),
        ("no_such_tool", "Unknown tool: no_such_tool"),
        ("delta_read_only", "You may read 'delta_read_only' but not execute it."),
        ("foxtrot_inactive", "Tool 'foxtrot_inactive' is deactivated."),
    ],
)
def test_a_tool_the_caller_may_not_run_is_a_protocol_error_that_reveals_no_hidden_tool(
    world, name, message
):
    async def scenario():
        async with mcp_client(world.url, world.token) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool(name, {"path": "x"})
            return raised.value

    error = asyncio.run(scenario())
    assert error.code == -32602
    assert error.message == message
    assert world.upstream.requests == []  # nothing reached the tool


def test_a_call_needing_approval_waits_and_answers_once_approved(world):
    async def scenario():
        async with mcp_client(world.url, world.token) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, approve_when_pending, world)
                return await client.call_tool("golf_gated", {"path": "approved"})

    result = asyncio.run(scenario())
    assert result.is_error is False
    assert result.structured_content["data"]["path"] == "/echo/approved"
    execution = latest(tool=world.gated)
    assert execution.status == ExecutionStatus.SUCCEEDED
    assert execution.approval.status == "approved"


def test_a_2026_client_waits_for_approval_through_input_required_rounds(world):
    async def scenario():
        async with mcp_client(world.url, world.token, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"

            def approve_later():
                time.sleep(2.5)  # past a round (TOOLHUB_MCP_APPROVAL_ROUND=1)
                approve_when_pending(world)

            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, approve_later)
                return await client.call_tool("golf_gated", {"path": "modern"})

    result = asyncio.run(scenario())
    assert result.is_error is False
    assert result.structured_content["data"]["path"] == "/echo/modern"
    execution = latest(tool=world.gated)
    assert (execution.status, execution.protocol_version) == ("succeeded", "2026-07-28")
    assert Execution.objects.filter(tool=world.gated).count() == 1  # retries never re-admit


def test_cancelling_a_call_cancels_its_execution(world):
    async def scenario():
        async with mcp_client(world.url, world.token) as client:
            with anyio.move_on_after(2):
                await client.call_tool("golf_gated", {"path": "never"})
            await anyio.sleep(0)

    asyncio.run(scenario())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        execution = latest(tool=world.gated)
        if execution is not None and execution.status == ExecutionStatus.CANCELLED:
            break
        time.sleep(0.2)
    assert execution.status == ExecutionStatus.CANCELLED
    assert execution.approval.status == "cancelled"
    assert world.upstream.requests == []


# --------------------------------------------------------------------------- the gate


def test_without_a_token_the_answer_is_401_naming_the_resource_metadata(world):
    response, _ = rpc(world.url, None, "tools/list")
    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    metadata_url = challenge.split('resource_metadata="')[1].rstrip('"')
    metadata = httpx2.get(metadata_url).json()
    assert metadata["resource"] == world.url
    assert metadata["bearer_methods_supported"] == ["header"]


def test_a_bad_token_is_401_invalid_token(world):
    response, _ = rpc(world.url, "th_not-a-token", "tools/list")
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


@pytest.mark.parametrize(
    ("origin", "status"),
    [("http://evil.example", 403), ("null", 403), (TRUSTED_ORIGIN, 200), ("own", 200)],
)
def test_a_browser_origin_is_answered_only_when_allowed(world, origin, status):
    if origin == "own":  # a page of ToolHub itself: its scheme, host and port
        origin = f"http://127.0.0.1:{world.live.ports[0]}"
    response, _ = rpc(
        world.url,
        world.token,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "browser", "version": "1"},
        },
        headers={"Origin": origin},
    )
    assert response.status_code == status


def test_a_body_past_the_limit_is_refused_with_413(world, settings):
    huge = {"path": "x" * (settings.TOOLHUB_MCP_MAX_BODY_BYTES + 10)}
    response, _ = rpc(world.url, world.token, "tools/call", {"name": "alpha", "arguments": huge})
    assert response.status_code == 413


def test_a_client_too_slow_to_send_its_body_gets_408(world):
    port = world.live.ports[0]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {world.token}\r\n".encode()
            + b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"jsonrpc"'
        )
        started = time.monotonic()
        answer = sock.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 408")
    assert time.monotonic() - started < 5  # TOOLHUB_MCP_BODY_TIMEOUT=1 in the fixture


# --------------------------------------------------------------------------- revisions


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_an_older_revision_client_lists_and_calls_through_its_session(world, revision):
    init, answers = rpc(
        world.url,
        world.token,
        "initialize",
        {
            "protocolVersion": revision,
            "capabilities": {},
            "clientInfo": {"name": "old-client", "version": revision},
        },
    )
    assert answers[0]["result"]["protocolVersion"] == revision
    session = {"Mcp-Session-Id": init.headers["mcp-session-id"]}
    if revision >= "2025-06-18":
        session["MCP-Protocol-Version"] = revision
    _, listed = rpc(world.url, world.token, "tools/list", rpc_id=2, headers=session)
    assert {tool["name"] for tool in listed[0]["result"]["tools"]} <= EXECUTABLE | {"golf_gated"}
    _, called = rpc(
        world.url,
        world.token,
        "tools/call",
        {"name": "charlie", "arguments": {"path": "old"}},
        rpc_id=3,
        headers=session,
    )
    assert called[-1]["result"]["isError"] is False
    execution = latest(tool=world.tools["charlie"])
    assert (execution.client_name, execution.protocol_version) == ("old-client", revision)


def test_a_session_of_another_token_is_not_found(world, owner):
    init, _ = rpc(
        world.url,
        world.token,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "a", "version": "1"},
        },
    )
    other = make_token(owner)
    response, _ = rpc(
        world.url,
        other,
        "tools/list",
        headers={"Mcp-Session-Id": init.headers["mcp-session-id"]},
    )
    assert response.status_code == 404


class Alternating(httpx2.AsyncBaseTransport):
    """Sends each request to the next of the web processes, in turn."""

    def __init__(self, ports):
        self.ports, self.turn, self.seen = ports, 0, []
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request):
        port = self.ports[self.turn % len(self.ports)]
        self.turn += 1
        self.seen.append(port)
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_two_web_processes_serve_one_client(world, mode):
    transport = Alternating(world.live.ports)

    async def scenario():
        async with mcp_client(world.url, world.token, mode=mode, transport=transport) as client:
            tools, _ = await all_tools(client)
            results = [await client.call_tool("alpha", {"path": f"{i}"}) for i in range(3)]
            return tools, results

    tools, results = asyncio.run(scenario())
    assert set(transport.seen) == set(world.live.ports)
    assert {tool.name for tool in tools} == EXECUTABLE | {"golf_gated"}
    assert [r.is_error for r in results] == [False, False, False]
    executions = Execution.objects.filter(tool=world.tools["alpha"])
    assert executions.count() == 3
    # The client's name reached every record, whichever process opened the session.
    assert set(executions.values_list("client_name", flat=True)) == {"toolhub-tests"}


# --------------------------------------------------------------------------- secrets, toolsets


def test_a_planted_secret_never_appears_in_any_mcp_response(world):
    texts = []
    init, _ = rpc(
        world.url,
        world.token,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    )
    texts.append(init.text)
    session = {"Mcp-Session-Id": init.headers["mcp-session-id"]}
    for rpc_id, (method, params) in enumerate(
        [
            ("tools/list", {}),
            ("tools/call", {"name": "alpha", "arguments": {"path": "secret"}}),
            ("tools/call", {"name": "alpha", "arguments": {"path": 1}}),
            ("tools/call", {"name": "echo_hidden", "arguments": {"path": "secret"}}),
        ],
        start=2,
    ):
        response, _ = rpc(world.url, world.token, method, params, rpc_id=rpc_id, headers=session)
        texts.append(response.text)
    assert world.upstream.last.headers["authorization"] == f"Bearer {CANARY}"  # it was sent
    assert "Bearer [REDACTED]" in texts[2]  # the echo came back, its secret redacted
    assert all(CANARY not in text for text in texts)
    assert all(world.token not in text for text in texts)
    # The caller's token authenticates it to ToolHub only: no upstream ever sees it.
    assert all(world.token not in str(sent.headers) for sent in world.upstream.requests)


def test_a_toolset_serves_only_its_tools_the_caller_may_execute(world, upstream):
    toolset = Toolset.objects.create(name="Support", slug="support")
    toolset.tools.add(world.tools["alpha"], world.tools["bravo"])
    toolset.tools.add(Tool.objects.get(name="echo_hidden"))

    async def scenario():
        async with mcp_client(world.live.url("/mcp/support"), world.token) as client:
            tools, _ = await all_tools(client)
            with pytest.raises(MCPError) as outside:
                await client.call_tool("charlie", {"path": "x"})
            inside = await client.call_tool("alpha", {"path": "x"})
            return tools, outside.value, inside

    tools, outside, inside = asyncio.run(scenario())
    assert {tool.name for tool in tools} == {"alpha", "bravo"}  # not echo_hidden: no grant
    assert outside.message == "Unknown tool: charlie"
    assert inside.is_error is False
    response, _ = rpc(world.live.url("/mcp/nope"), world.token, "tools/list")
    assert response.status_code == 404


# --------------------------------------------------------------------------- list changes, progress


def test_a_2025_session_hears_that_its_tool_list_changed(world):
    heard = []

    async def on_message(message):
        if not isinstance(message, Exception):
            heard.append(message.method)

    def revoke_alpha():
        time.sleep(1)
        try:
            tool_services.tool_deactivate(actor=None, tool=world.tools["alpha"])
        finally:
            close_old_connections()

    async def scenario():
        async with mcp_client(world.url, world.token, message_handler=on_message) as client:
            assert client.server_capabilities.tools.list_changed is True
            await anyio.to_thread.run_sync(revoke_alpha)
            with anyio.move_on_after(10):
                while "notifications/tools/list_changed" not in heard:
                    await anyio.sleep(0.1)
            tools, _ = await all_tools(client)
            return {tool.name for tool in tools}

    names = asyncio.run(scenario())
    assert "notifications/tools/list_changed" in heard
    assert names == {"bravo", "charlie", "golf_gated"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_that_asked_for_progress_hears_while_a_call_waits(world, mode):
    updates = []

    async def on_progress(progress, total, message):
        updates.append(message)

    async def scenario():
        async with mcp_client(world.url, world.token, mode=mode) as client:

            def approve_later():
                time.sleep(2.5)
                approve_when_pending(world)

            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, approve_later)
                return await client.call_tool(
                    "golf_gated", {"path": "progress"}, progress_callback=on_progress
                )

    result = asyncio.run(scenario())
    assert result.is_error is False
    assert any("waiting for approval" in (message or "") for message in updates)


def test_a_2026_client_closing_its_request_cancels_the_call(world):
    async def scenario():
        async with mcp_client(world.url, world.token, mode="auto") as client:
            with anyio.move_on_after(0.5):  # inside the first approval round
                await client.call_tool("golf_gated", {"path": "never"})

    asyncio.run(scenario())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        execution = latest(tool=world.gated)
        if execution is not None and execution.status == ExecutionStatus.CANCELLED:
            break
        time.sleep(0.2)
    assert execution.status == ExecutionStatus.CANCELLED


def test_a_2026_client_listening_hears_that_its_tool_list_changed(world):
    def revoke_bravo():
        time.sleep(1)
        try:
            tool_services.tool_deactivate(actor=None, tool=world.tools["bravo"])
        finally:
            close_old_connections()

    async def scenario():
        async with mcp_client(world.url, world.token, mode="auto") as client:
            assert client.server_capabilities.tools.list_changed is True
            async with client.listen(tools_list_changed=True) as subscription:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(anyio.to_thread.run_sync, revoke_bravo)
                    with anyio.fail_after(10):
                        event = await anext(aiter(subscription))
            tools, _ = await all_tools(client)
            return type(event).__name__, {tool.name for tool in tools}

    event, names = asyncio.run(scenario())
    assert event == "ToolsListChanged"
    assert names == {"alpha", "charlie", "golf_gated"}
