"""What an agent finds and runs through ToolHub's MCP endpoint: the tools it may
execute, page by page and per toolset, and each call's outcome (run and recorded,
refused with what to correct, waiting for approval, cancelled).

Against the live ToolHub of ``conftest.live_toolhub`` (two uvicorn processes serving
``toolhub.asgi:application``, PostgreSQL, Redis and a real Celery worker), driven by the
official ``mcp`` SDK client over streamable HTTP or by raw JSON-RPC posts.
"""

from __future__ import annotations

import asyncio
import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from executions.models import Execution, ExecutionStatus
from registry.models import AuditEvent, Tool, Toolset
from registry.services import guards as guard_services
from registry.services import limits as limit_services
from tests.executions.mcp_server.conftest import (
    EXECUTABLE,
    all_tools,
    approve_when_pending,
    latest,
    mcp_client,
    rpc,
)

pytestmark = [pytest.mark.django_db(transaction=True)]


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


# --------------------------------------------------------------------------- toolsets


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
    # The call outside the toolset is a recorded refusal, like any other, that names the
    # toolset; the answer points at it.
    refused = Execution.objects.get(tool=world.tools["charlie"])
    assert refused.status == "denied" and refused.reason_code == "tool_not_in_toolset"
    assert "toolset 'support'" in refused.error_message
    assert outside.data["execution_id"] == str(refused.pk)
    assert AuditEvent.objects.filter(action="execution.denied", target_id=str(refused.pk)).exists()
    response, _ = rpc(world.live.url("/mcp/nope"), world.token, "tools/list")
    assert response.status_code == 404
