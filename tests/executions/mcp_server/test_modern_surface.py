"""The 2026-07-28 surface at ``/mcp``: request metadata headers checked against the body
(``HeaderMismatch``: a proxy's header-based policy cannot be bypassed), ``server/discover``,
and ``tools/list`` in a deterministic order with its caching hints (schemas as 2020-12
with ``$schema`` and a server's ``$defs``: test_upstream_content.py).

Raw JSON-RPC posts (the headers are what is tested) to the live ToolHub of
``conftest.live_toolhub``, and the official SDK client.
"""

from __future__ import annotations

import pytest
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

from executions.models import Execution
from tests.executions.mcp_server.conftest import rpc

pytestmark = [pytest.mark.django_db(transaction=True)]

MODERN = "2026-07-28"
HEADER_MISMATCH = -32020


def envelope(**params) -> dict:
    return {
        **params,
        "_meta": {
            PROTOCOL_VERSION_META_KEY: MODERN,
            CLIENT_CAPABILITIES_META_KEY: {},
            CLIENT_INFO_META_KEY: {"name": "surface", "version": "1"},
        },
    }


def modern(world, method: str, params: dict, **headers):
    sent = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, **headers}
    if method == "tools/call" and "Mcp-Name" not in headers:
        sent["Mcp-Name"] = params["name"]
    return rpc(world.url, world.token, method, envelope(**params), headers=sent)


def error_of(answer) -> dict:
    _, messages = answer
    (message,) = messages
    return message.get("error") or {}


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"Mcp-Method": "tools/list"}, "Mcp-Method"),
        ({"Mcp-Name": "bravo"}, "Mcp-Name"),
        # An earlier revision's request checks them too: a proxy deciding by the headers
        # is not bypassed by naming another revision.
        ({"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, "Mcp-Method"),
        ({"MCP-Protocol-Version": "2025-11-25", "Mcp-Name": "bravo"}, "Mcp-Name"),
    ],
)
def test_metadata_headers_that_differ_from_the_body_are_a_header_mismatch(world, headers, says):
    before = Execution.objects.count()
    answer = modern(world, "tools/call", {"name": "alpha", "arguments": {"path": "x"}}, **headers)
    error = error_of(answer)
    assert error.get("code") == HEADER_MISMATCH, answer[1]
    assert says.lower() in error["message"].lower()
    assert Execution.objects.count() == before  # nothing was called


def test_matching_headers_call_the_tool(world):
    answer = modern(world, "tools/call", {"name": "alpha", "arguments": {"path": "x"}})
    (message,) = answer[1]
    assert "result" in message, message  # admitted: run, or still running on a busy worker
    execution_id = message["result"]["_meta"]["io.toolhub/execution"]["id"]
    assert Execution.objects.get(pk=execution_id).tool_name == "alpha"


def test_server_discover_is_served(world):
    answer = modern(world, "server/discover", {})
    (message,) = answer[1]
    result = message.get("result") or {}
    assert MODERN in result.get("supportedVersions", []), message
    assert result["capabilities"]["tools"], result
    assert result["resultType"] == "complete" and "ttlMs" in result and "cacheScope" in result
    assert "governed by ToolHub" in result["instructions"]


def test_tools_list_is_ordered_with_private_caching_hints(world):
    first = modern(world, "tools/list", {})[1][0]["result"]
    again = modern(world, "tools/list", {})[1][0]["result"]
    names = [tool["name"] for tool in first["tools"]]
    assert names == sorted(names) and names == [tool["name"] for tool in again["tools"]]
    assert first["cacheScope"] == "private"
    assert isinstance(first["ttlMs"], int) and first["ttlMs"] >= 0
