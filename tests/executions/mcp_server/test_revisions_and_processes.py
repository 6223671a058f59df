"""Clients of older protocol revisions, through their sessions, and one client served
by two web processes in turn.

Against the live ToolHub of ``conftest.live_toolhub`` (two uvicorn processes serving
``toolhub.asgi:application``, PostgreSQL, Redis and a real Celery worker), driven by the
official ``mcp`` SDK client over streamable HTTP or by raw JSON-RPC posts.
"""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from executions.models import Execution
from tests.executions.mcp_server.conftest import (
    EXECUTABLE,
    all_tools,
    latest,
    mcp_client,
    rpc,
)
from tests.factories import make_token

pytestmark = [pytest.mark.django_db(transaction=True)]


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
