"""What a client hears while connected: that its tool list changed (a 2025 session, a
2026-07-28 listener), progress while a call waits, and a closed request cancelling
its call.

Against the live ToolHub of ``conftest.live_toolhub`` (two uvicorn processes serving
``toolhub.asgi:application``, PostgreSQL, Redis and a real Celery worker), driven by the
official ``mcp`` SDK client over streamable HTTP or by raw JSON-RPC posts.
"""

from __future__ import annotations

import asyncio
import time

import anyio
import pytest
from django.db import close_old_connections

from executions.models import ExecutionStatus
from registry.services import tools as tool_services
from tests.executions.mcp_server.conftest import (
    all_tools,
    approve_when_pending,
    latest,
    mcp_client,
)

pytestmark = [pytest.mark.django_db(transaction=True)]


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
