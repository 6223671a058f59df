"""An MCP tool's result reaches an MCP caller as its server gave it.

ToolHub in front of the test MCP server (``tests/servers/mcp_server.py``), synced as an
operator would; the official SDK client calls through the live ToolHub (two uvicorn
processes, a Celery worker). Text, image and embedded-resource blocks, annotations,
``structuredContent`` and ``isError`` come through unchanged; past the tool's
``max_response_bytes`` the blocks that fit come inline and the rest as links to their
own bytes, which the REST API serves.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid

import httpx
import jsonschema
import mcp_types as types
import pytest
from django.db import close_old_connections

from executions.mcp_sync import mcp_server_sync
from executions.models import Execution, ExecutionStatus
from registry.models import Tool
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import mcp as mcp_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.executions.mcp_server.conftest import all_tools, mcp_client
from tests.executions.test_mcp import ServerProcess
from tests.factories import make_token
from tests.servers.mcp_server import PIXEL_PNG

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = f"content-canary-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def upstream_mcp():
    server = ServerProcess("streamable-http", "--token", TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def synced(live_toolhub, upstream_mcp, owner, allow_loopback):
    """The server registered and synced, its tools approved and granted to an agent."""
    server = mcp_services.mcp_server_create(
        actor=None,
        name="web",
        transport="streamable_http",
        url=upstream_mcp.url,
        auth_token=TOKEN,
    )
    assert mcp_server_sync(actor=None, server=server).ok
    role = role_services.role_create(actor=None, name="content-callers")
    agent = agent_services.agent_create(
        actor=None, name="content-agent", owner=owner, role_ids=[role.pk]
    )
    for tool in mcp_services.mcp_server_tools(server):  # pinned at this first sync
        grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return live_toolhub, make_token(agent.user)


def call(live, token: str, name: str, arguments: dict) -> types.CallToolResult:
    async def scenario():
        async with mcp_client(live.url(), token) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(scenario())


def latest(name: str) -> Execution:
    close_old_connections()
    return Execution.objects.filter(tool_name=name).order_by("-created_at").first()


def test_a_schema_with_defs_is_listed_as_the_server_gave_it_and_calls_validate(synced):
    live, token = synced

    async def scenario():
        async with mcp_client(live.url(), token, mode="auto") as client:
            tools = {tool.name: tool for tool in (await all_tools(client))[0]}
            called = await client.call_tool("web__move", {"to": {"x": 1, "y": 2}})
            refused = await client.call_tool("web__move", {"to": {"x": "far"}})
            return tools, called, refused

    tools, called, refused = asyncio.run(scenario())
    schema = tools["web__move"].input_schema
    assert schema["properties"]["to"] == {"$ref": "#/$defs/Point"}
    assert set(schema["$defs"]["Point"]["properties"]) == {"x", "y"}
    # Every listed schema is valid JSON Schema 2020-12; the registry's say so ($schema), the
    # server's is as it came (without one, which MCP reads as 2020-12).
    dialect = "https://json-schema.org/draft/2020-12/schema"
    for tool in tools.values():
        assert tool.input_schema.get("$schema", dialect) == dialect
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    assert tools["web__add"].input_schema["$schema"] == dialect
    assert called.is_error is False and called.content[0].text == "(1,2)"
    assert refused.is_error is True  # validated against the same schema, inlined
    assert "to.x" in refused.content[0].text or "/to/x" in refused.content[0].text

    # A parameter changed in ToolHub: the registry's schema is listed, not the server's.
    tool = Tool.objects.get(name="web__move")
    tool_services.parameter_update(
        actor=None, parameter=tool.parameters.get(name="label"), data={"description": "Shown."}
    )

    async def listed_again():
        async with mcp_client(live.url(), token, mode="auto") as client:
            return {t.name: t for t in (await all_tools(client))[0]}["web__move"]

    again = asyncio.run(listed_again()).input_schema
    assert "$defs" not in again and again["properties"]["label"]["description"] == "Shown."
    assert again["properties"]["to"]["properties"]["x"]["type"] == "integer"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_upstreams_progress_reaches_the_caller_while_the_worker_runs_the_call(synced, mode):
    live, token = synced
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress, total, message):
        heard.append((progress, total, message))

    async def scenario():
        async with mcp_client(live.url(), token, mode=mode) as client:
            return await client.call_tool(
                "web__steps", {"count": 3, "pause": 0.6}, progress_callback=on_progress
            )

    result = asyncio.run(scenario())
    assert result.is_error is False and result.content[0].text == "3 steps"
    relayed = [h for h in heard if h[2] and h[2].startswith("step ")]
    assert [h[2] for h in relayed] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"], heard
    values = [h[0] for h in heard]
    assert values == sorted(values) and len(set(values)) == len(values)  # only ever grows
    base = relayed[0][0] - 1
    assert [(p - base, t - base) for p, t, _ in relayed] == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_cancelling_a_running_call_stops_it_on_the_worker(synced, mode):
    import anyio

    live, token = synced

    def running() -> bool:
        close_old_connections()
        row = latest("web__slow")
        return row is not None and row.status == ExecutionStatus.RUNNING

    async def scenario():
        async with mcp_client(live.url(), token, mode=mode) as client:
            with anyio.move_on_after(20):  # the client gives up: its SDK cancels the request
                async with anyio.create_task_group() as tg:
                    tg.start_soon(lambda: client.call_tool("web__slow", {"seconds": 30}))
                    while not await anyio.to_thread.run_sync(running):
                        await anyio.sleep(0.2)
                    tg.cancel_scope.cancel()
            # The same session calls again at once: nothing of the first call holds it.
            return await client.call_tool("web__add", {"a": 2, "b": 2})

    started = time.monotonic()
    again = asyncio.run(scenario())
    assert again.content[0].text == "4"
    deadline = time.monotonic() + 15
    while latest("web__slow").status == ExecutionStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.2)
    row = latest("web__slow")
    assert row.status == ExecutionStatus.CANCELLED, row.status
    assert time.monotonic() - started < 25  # not the 30 s the upstream would have taken


def test_image_and_embedded_resource_blocks_reach_the_caller_unchanged(synced):
    live, token = synced
    result = call(live, token, "web__media", {})
    assert result.is_error is False
    text, image, resource = result.content
    assert text == types.TextContent(text="a pixel")
    assert isinstance(image, types.ImageContent)
    assert (image.data, image.mime_type) == (PIXEL_PNG, "image/png")
    assert isinstance(resource, types.EmbeddedResource)
    assert resource.resource == types.TextResourceContents(
        uri="file:///notes.txt", mime_type="text/plain", text="resource text"
    )
    assert result.structured_content is None  # the server gave none: none is made up
    execution = latest("web__media")
    assert str(execution.pk) == result.meta["io.toolhub/execution"]["id"]
    # REST reads the same blocks in output.content.
    assert execution.output_data["content"][1] == {
        "type": "image",
        "data": PIXEL_PNG,
        "mimeType": "image/png",
    }


def test_annotations_structured_content_and_json_text_come_through(synced):
    live, token = synced
    annotated = call(live, token, "web__resource_text", {"text": "memo"})
    assert annotated.content[0].annotations == types.Annotations(audience=["user"], priority=0.5)
    structured = call(live, token, "web__structured", {})
    assert structured.structured_content == {
        "answer": 42,
        "items": ["a", "b"],
        "nested": {"ok": True},
    }
    as_text = call(live, token, "web__json_text", {})
    assert as_text.content == [types.TextContent(text='{"kind": "json", "values": [1, 2, 3]}')]
    # The server's own structuredContent (its SDK wraps a str return), not a parse of the text.
    assert as_text.structured_content == {"result": '{"kind": "json", "values": [1, 2, 3]}'}


def test_an_error_the_server_reports_comes_back_as_its_own_result(synced):
    live, token = synced
    result = call(live, token, "web__fail", {"message": "the widget broke"})
    assert result.is_error is True
    assert result.content == [types.TextContent(text="Error executing tool fail: the widget broke")]
    execution = latest("web__fail")
    assert (execution.status, execution.error_type) == (ExecutionStatus.FAILED, "upstream_error")


def test_blocks_past_the_tools_cap_are_links_to_their_bytes(synced):
    live, token = synced
    tool = Tool.objects.get(name="web__big_image")
    tool_services.tool_update(actor=None, tool=tool, data={"max_response_bytes": 1024})
    result = call(live, token, "web__big_image", {"size": 5000})
    assert result.is_error is False
    text, link = result.content
    assert text == types.TextContent(text="an image of 5000 bytes")
    assert isinstance(link, types.ResourceLink)
    assert (link.mime_type, link.size) == ("image/png", 5000)
    execution = latest("web__big_image")
    assert execution.output_truncated and execution.output_artifact
    assert link.uri == f"{live.url('')}/api/v1/executions/{execution.pk}/output/content/1"

    headers = {"Authorization": f"Bearer {token}"}
    fetched = httpx.get(link.uri, headers=headers, timeout=30)
    assert fetched.status_code == 200
    assert fetched.headers["content-type"] == "image/png"
    expected = bytes(range(256)) * (5000 // 256) + bytes(range(5000 % 256))
    assert fetched.content == expected
    beyond = httpx.get(link.uri[:-1] + "2", headers=headers, timeout=30)
    assert beyond.status_code == 404
    assert "has 2 content blocks" in beyond.json()["error"]["message"]
    # The whole output is still there as JSON, the image as the server sent it.
    whole = httpx.get(
        f"{live.url('')}/api/v1/executions/{execution.pk}/output", headers=headers, timeout=30
    ).json()
    assert base64.b64decode(whole["content"][1]["data"]) == expected


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_upstreams_logs_and_progress_reach_the_caller_without_its_credential(synced, mode):
    """The server quotes the credential ToolHub sends it in a log line, a structured log
    entry and a progress message: the caller hears each, with the credential taken out."""
    live, token = synced
    logs: list[tuple[str, object]] = []
    progress: list[str | None] = []

    async def on_log(params):
        logs.append((params.level, params.data))

    async def on_progress(value, total, message):
        progress.append(message)

    async def scenario():
        options = {"logging_callback": on_log}
        if mode == "auto":
            options["log_level"] = "info"
        async with mcp_client(live.url(), token, mode=mode, **options) as client:
            if mode == "legacy":
                await client.set_logging_level("info")
            return await client.call_tool("web__chatty", {}, progress_callback=on_progress)

    result = asyncio.run(scenario())
    assert result.is_error is False and result.content[0].text == "chatted"
    assert [level for level, _ in logs] == ["info", "warning"], logs
    heard = repr(logs) + repr(progress)
    assert TOKEN not in heard and base64.b64encode(TOKEN.encode()).decode() not in heard
    assert logs[0][1].startswith("connected with ") and logs[1][1]["note"] == "structured"
    assert any(message and message.startswith("still using ") for message in progress)
