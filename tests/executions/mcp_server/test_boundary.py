"""The endpoint's boundary: who is let in (a token, a browser origin), the bodies it
refuses (too large, too slow), and the secrets that never come out.

Against the live ToolHub of ``conftest.live_toolhub`` (two uvicorn processes serving
``toolhub.asgi:application``, PostgreSQL, Redis and a real Celery worker), driven by the
official ``mcp`` SDK client over streamable HTTP or by raw JSON-RPC posts.
"""

from __future__ import annotations

import socket
import time

import httpx2
import pytest

from tests.executions.mcp_server.conftest import (
    CANARY,
    TRUSTED_ORIGIN,
    rpc,
)

pytestmark = [pytest.mark.django_db(transaction=True)]


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


# --------------------------------------------------------------------------- secrets


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
