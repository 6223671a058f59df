"""What a client cannot make the gate keep or believe: sessions it did not open, more
sessions than its token may hold, a ``requestState`` for another call, a second
``Authorization`` header, an Origin on another port.

Against the live ToolHub of ``conftest.live_toolhub`` (``TOOLHUB_MCP_SESSIONS_PER_TOKEN=3``,
``TOOLHUB_MCP_REQUEST_STATE_TTL=5``, ``TOOLHUB_MCP_APPROVAL_ROUND=1``).
"""

from __future__ import annotations

import asyncio

import httpx
import mcp_types as types
import pytest
import redis
from django.conf import settings
from mcp.shared.exceptions import MCPError

from executions.models import Execution
from registry.models import Toolset
from registry.models.tokens import hash_token
from tests.executions.mcp_server.conftest import latest, mcp_client, rpc

pytestmark = [pytest.mark.django_db(transaction=True)]

INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "s", "version": "1"},
}


def redis_db():
    return redis.Redis.from_url(settings.REDIS_URL)


def session_keys() -> set[bytes]:
    return set(redis_db().scan_iter("toolhub:mcp-session:*"))


# --------------------------------------------------------------------------- sessions


@pytest.mark.parametrize(
    "params",
    [
        {"protocolVersion": "2025-06-18"},  # no capabilities, no clientInfo
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x"}},
        {"protocolVersion": 2025, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
        {"capabilities": "all", "clientInfo": "me"},
    ],
)
def test_an_initialize_that_fails_stores_no_session(world, params):
    before = session_keys()
    response, answers = rpc(world.url, world.token, "initialize", params)
    assert "error" in answers[0] if answers else response.status_code >= 400
    assert "mcp-session-id" not in response.headers
    assert session_keys() == before
    assert not redis_db().exists(f"toolhub:mcp-sessions:{hash_token(world.token)}")


def test_a_successful_initialize_stores_the_session_with_the_agreed_revision(world):
    response, answers = rpc(world.url, world.token, "initialize", INITIALIZE)
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"
    session = response.headers["mcp-session-id"]
    assert redis_db().exists(f"toolhub:mcp-session:{session}")
    listed, _ = rpc(world.url, world.token, "tools/list", headers={"Mcp-Session-Id": session})
    assert listed.status_code == 200


def test_a_token_holds_at_most_its_sessions_the_least_recently_used_pushed_out(world):
    def open_session() -> str:
        response, _ = rpc(world.url, world.token, "initialize", INITIALIZE)
        return response.headers["mcp-session-id"]

    def status(session: str) -> int:
        response, _ = rpc(world.url, world.token, "tools/list", headers={"Mcp-Session-Id": session})
        return response.status_code

    first, second, third = open_session(), open_session(), open_session()
    assert status(first) == 200  # used: now the second is the least recently used
    fourth = open_session()  # TOOLHUB_MCP_SESSIONS_PER_TOKEN=3
    assert status(second) == 404
    assert [status(s) for s in (first, third, fourth)] == [200, 200, 200]
    index = f"toolhub:mcp-sessions:{hash_token(world.token)}"
    assert redis_db().zcard(index) == 3
    assert not redis_db().exists(f"toolhub:mcp-session:{second}")


# --------------------------------------------------------------------------- requestState


async def state_for_gated_call(client, arguments: dict) -> str:
    first = await client.session.call_tool("golf_gated", arguments, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    return first.request_state


@pytest.mark.parametrize(
    ("name", "arguments"),
    [("alpha", {"path": "state"}), ("golf_gated", {"path": "other"}), ("golf_gated", {})],
)
def test_a_request_state_replayed_for_another_tool_or_other_arguments_is_refused(
    world, name, arguments
):
    async def scenario():
        async with mcp_client(world.url, world.token, mode="auto") as client:
            state = await state_for_gated_call(client, {"path": "state"})
            with pytest.raises(MCPError) as raised:
                await client.session.call_tool(
                    name, arguments, request_state=state, allow_input_required=True
                )
            again = await client.session.call_tool(
                "golf_gated", {"path": "state"}, request_state=state, allow_input_required=True
            )
            return raised.value, again

    error, again = asyncio.run(scenario())
    assert error.code == -32602
    assert "requestState" in error.message
    assert isinstance(again, types.InputRequiredResult)  # the call it was given for goes on
    assert not Execution.objects.filter(tool=world.tools["alpha"]).exists()
    assert Execution.objects.filter(tool=world.gated).count() == 1


@pytest.mark.parametrize("toolset_tools", [["alpha"], ["alpha", "golf_gated"]])
def test_a_request_state_replayed_at_another_path_is_refused(world, toolset_tools):
    toolset = Toolset.objects.create(name="Elsewhere", slug="elsewhere")
    toolset.tools.add(*[world.tools.get(n) or world.gated for n in toolset_tools])

    async def scenario():
        async with mcp_client(world.url, world.token, mode="auto") as client:
            state = await state_for_gated_call(client, {"path": "here"})
        async with mcp_client(world.live.url("/mcp/elsewhere"), world.token, mode="auto") as other:
            with pytest.raises(MCPError) as raised:
                await other.session.call_tool(
                    "golf_gated", {"path": "here"}, request_state=state, allow_input_required=True
                )
            return raised.value

    error = asyncio.run(scenario())
    assert (error.code, error.message) == (-32602, "Invalid or expired requestState")


def test_a_request_state_past_its_ttl_is_refused(world):
    async def scenario():
        async with mcp_client(world.url, world.token, mode="auto") as client:
            state = await state_for_gated_call(client, {"path": "late"})
            await asyncio.sleep(5.5)  # TOOLHUB_MCP_REQUEST_STATE_TTL=5
            with pytest.raises(MCPError) as raised:
                await client.session.call_tool(
                    "golf_gated", {"path": "late"}, request_state=state, allow_input_required=True
                )
            return raised.value

    error = asyncio.run(scenario())
    assert (error.code, error.message) == (-32602, "Invalid or expired requestState")
    assert latest(tool=world.gated).status == "pending_approval"  # nothing answered for it


# --------------------------------------------------------------------------- headers, origin


@pytest.mark.parametrize("name", ["Authorization", "Mcp-Session-Id", "Origin"])
def test_a_request_with_two_of_a_single_header_is_refused_naming_it(world, name):
    values = {
        "Authorization": [f"Bearer {world.token}", "Bearer th_someone-else"],
        "Mcp-Session-Id": ["a" * 32, "b" * 32],
        "Origin": ["http://trusted.example", "http://evil.example"],
    }[name]
    headers = [("Accept", "application/json, text/event-stream")]
    if name != "Authorization":
        headers.append(("Authorization", f"Bearer {world.token}"))
    headers += [(name, value) for value in values]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx.post(world.url, json=body, headers=headers, timeout=30)
    assert response.status_code == 400
    assert response.json()["error"] == "duplicate_header"
    assert f"Send one {name} header" in response.json()["message"]


def test_an_origin_on_another_port_of_the_same_host_is_refused(world):
    port = world.live.ports[0]
    answers = {}
    for origin in (f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}", "http://127.0.0.1"):
        response, _ = rpc(world.url, world.token, "tools/list", headers={"Origin": origin})
        answers[origin] = response.status_code
    assert list(answers.values()) == [200, 403, 403]
