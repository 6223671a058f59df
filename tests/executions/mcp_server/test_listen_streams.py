"""Listen streams (the 2025 GET stream, 2026-07-28 ``subscriptions/listen``): capped per
token across web processes and per process, their places freed when they end, even
abnormally, and idle without a database connection.

Two uvicorn processes of their own (``TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN=2``,
``..._PER_PROCESS=3``, ``TOOLHUB_MCP_LISTEN_LEASE_SECONDS=3``), each naming its
database sessions, on the test database and Redis.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
from django.db import connection
from mcp.shared.exceptions import MCPError

from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from tests.executions.mcp_server.conftest import (
    echo_tool,
    mcp_client,
    rpc,
    toolhub_env,
    uvicorn_processes,
)
from tests.factories import make_token
from tests.workers import require_broker

pytestmark = [pytest.mark.django_db(transaction=True)]

APPLICATION = "toolhub-listen-tests"
LIMITS = {
    "TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN": "2",
    "TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS": "3",
    "TOOLHUB_MCP_LISTEN_LEASE_SECONDS": "3",
    "TOOLHUB_EGRESS_ALLOW": "127.0.0.1/32",
}
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "l", "version": "1"},
}


@pytest.fixture(scope="module")
def live(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        require_broker()  # the leases are in Redis
        with uvicorn_processes(toolhub_env(**LIMITS), application_name=APPLICATION) as live:
            yield live
        wait_for_no_sessions(f"{APPLICATION}-0", f"{APPLICATION}-1")


@pytest.fixture
def agents(owner):
    """Three agents with a token each (no tools yet)."""
    role = role_services.role_create(actor=None, name="listeners")
    tokens = []
    for name in ("ann", "bob", "cid"):
        agent = agent_services.agent_create(
            actor=None, name=f"listener-{name}", owner=owner, role_ids=[role.pk]
        )
        tokens.append(make_token(agent.user))
    return role, tokens


@asynccontextmanager
async def get_stream(url: str, token: str):
    """A 2025 session's GET stream (the response, open until the block ends)."""
    init = await asyncio.to_thread(rpc, url, token, "initialize", INITIALIZE)
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "text/event-stream",
        "Mcp-Session-Id": init[0].headers["mcp-session-id"],
    }
    async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=60)) as http:
        async with http.stream("GET", url, headers=headers) as response:
            if response.status_code != 200:
                await response.aread()
            yield response


@asynccontextmanager
async def listening(url: str, token: str):
    """A 2026-07-28 ``subscriptions/listen`` stream through the SDK client."""
    async with mcp_client(url, token, mode="auto") as client:
        async with client.listen(tools_list_changed=True) as subscription:
            yield subscription


async def listen_refusal(url: str, token: str) -> MCPError:
    async with mcp_client(url, token, mode="auto") as client:
        with pytest.raises(MCPError) as raised:
            async with client.listen(tools_list_changed=True):
                pass
        return raised.value


async def get_status(url: str, token: str) -> tuple[int, dict]:
    async with get_stream(url, token) as response:
        body = json.loads(response.content) if response.status_code != 200 else {}
        return response.status_code, body


async def opens_within(url: str, token: str, seconds: float) -> float:
    """Seconds until a GET stream of ``token`` opens (its place freed), or fail."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if (await get_status(url, token))[0] == 200:
            return time.monotonic() - started
        await anyio.sleep(0.25)
    raise AssertionError(f"no place freed within {seconds} s")


def test_a_token_past_its_listen_streams_gets_429_naming_the_setting_on_any_process(live, agents):
    _, (token, *_) = agents

    async def scenario():
        async with get_stream(live.url(index=0), token) as first, listening(live.url(), token):
            assert first.status_code == 200
            # the other process counts the same token's streams (Redis)
            status, body = await get_status(live.url(index=1), token)
            refused = await listen_refusal(live.url(index=1), token)
        freed = await opens_within(live.url(index=1), token, 5)
        return status, body, refused, freed

    status, body, refused, freed = asyncio.run(scenario())
    assert status == 429
    assert body["setting"] == "TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN"
    assert "TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN=2" in body["message"]
    assert "TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN=2" in refused.message
    assert freed < 2  # closing a stream gives its place back at once


def test_a_process_past_its_listen_streams_gets_429_naming_the_setting(live, agents):
    _, (ann, bob, _) = agents
    here, there = live.url(index=0), live.url(index=1)

    async def scenario():
        async with get_stream(here, ann), listening(here, ann), get_stream(here, bob):
            status, body = await get_status(here, bob)  # bob has 1 of his 2 places
            refused = await listen_refusal(here, bob)
            elsewhere, _ = await get_status(there, bob)
        return status, body, refused, elsewhere

    status, body, refused, elsewhere = asyncio.run(scenario())
    assert status == 429
    assert body["setting"] == "TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS"
    assert "TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS=3" in refused.message
    assert elsewhere == 200  # the other process has places


def test_the_places_of_a_process_that_died_are_freed_when_their_leases_expire(live, agents):
    _, (token, *_) = agents
    env = toolhub_env(**LIMITS)

    async def scenario(doomed):
        async with get_stream(doomed.url(), token) as one, get_stream(doomed.url(), token) as two:
            assert (one.status_code, two.status_code) == (200, 200)
            os.killpg(doomed.procs[0].pid, signal.SIGKILL)  # no stream of it ends cleanly
            doomed.procs[0].wait(timeout=10)
            status, _ = await get_status(live.url(), token)
            freed = await opens_within(live.url(), token, 10)
        return status, freed

    with uvicorn_processes(env, count=1, application_name=f"{APPLICATION}-doomed") as doomed:
        status, freed = asyncio.run(scenario(doomed))
    wait_for_no_sessions(f"{APPLICATION}-doomed-0")
    assert status == 429  # the dead process's leases still count ...
    assert freed <= 3 + 2  # ... until they expire (TOOLHUB_MCP_LISTEN_LEASE_SECONDS=3)


@pytest.mark.parametrize("how", ["revoked", "expired"])
def test_a_stream_ends_within_30_s_of_its_token_being_revoked_or_expiring(live, agents, how):
    from datetime import timedelta

    from django.utils import timezone

    from registry.models.tokens import ApiToken, hash_token
    from registry.services import tokens as token_services

    _, (one, other, _) = agents  # a token per stream: the per-token cap is not in play
    rows = [ApiToken.objects.get(token_hash=hash_token(t)) for t in (one, other)]
    lapse = 10.0  # seconds from now: past the opening of both streams on a busy machine
    if how == "expired":
        at = timezone.now() + timedelta(seconds=lapse)
        ApiToken.objects.filter(pk__in=[r.pk for r in rows]).update(expires_at=at)

    def revoke():
        try:
            for row in rows:
                token_services.token_revoke(actor=None, token=row)
        finally:
            connection.close()

    async def scenario():
        async with get_stream(live.url(index=0), one) as stream:
            async with listening(live.url(index=1), other) as sub:
                assert stream.status_code == 200
                if how == "revoked":
                    await asyncio.to_thread(revoke)
                    lapsed = time.monotonic()
                else:
                    lapsed = opened + lapse
                with anyio.fail_after(60):
                    async for _ in sub:
                        pass  # a graceful close ends the loop; an abrupt one would raise
                listen_ended = time.monotonic() - lapsed
                with anyio.fail_after(60):
                    async for _ in stream.aiter_raw():
                        pass
                get_ended = time.monotonic() - lapsed
        again = await asyncio.to_thread(rpc, live.url(), one, "tools/list")
        return listen_ended, get_ended, again[0].status_code

    opened = time.monotonic()
    listen_ended, get_ended, status = asyncio.run(scenario())
    assert listen_ended < 30 and get_ended < 30, (listen_ended, get_ended)
    assert status == 401  # listening again is refused


def server_connections(name: str) -> int:
    """Open database sessions of the web process whose sessions are named ``name``."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name]
            )
            return cursor.fetchone()[0]
    finally:
        connection.close()  # called from threads too: none may keep one open


def test_an_idle_listen_stream_holds_no_database_connection(agents, upstream):
    role, (token, *_) = agents
    # One process whose pool has one connection, and one MCP thread: while two streams
    # are open and idle, a request to the same process must still get that connection
    # at once (a stream holding it would make the request wait out the pool's timeout
    # and answer 503), and the process never opens a second.
    env = toolhub_env(**LIMITS, TOOLHUB_MCP_THREADS="1", TOOLHUB_DB_POOL_SIZE="1")
    name = f"{APPLICATION}-idle"

    def grant_a_tool():
        try:
            tool = echo_tool(upstream, "listen_news")
            grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
        finally:
            connection.close()

    async def scenario(url: str):
        base = url.rsplit("/mcp", 1)[0]
        async with get_stream(url, token) as stream, listening(url, token) as sub:
            assert stream.status_code == 200
            await anyio.sleep(3)  # past a round of the watcher that re-reads the lists
            async with httpx.AsyncClient(timeout=10) as client:
                started = time.monotonic()
                answer = await client.get(
                    f"{base}/api/v1/registry/me", headers={"Authorization": f"Bearer {token}"}
                )
                waited = time.monotonic() - started
            held = await asyncio.to_thread(server_connections, f"{name}-0")
            await asyncio.to_thread(grant_a_tool)  # still listening: a change is heard
            with anyio.fail_after(10):
                event = await anext(aiter(sub))
            return answer.status_code, waited, held, type(event).__name__

    with uvicorn_processes(env, count=1, application_name=name) as own:
        status, waited, held, event = asyncio.run(scenario(own.url()))
    wait_for_no_sessions(f"{name}-0")
    assert status == 200 and waited < 3, (status, waited)  # the pool's timeout is 5 s
    assert held <= 1, f"connections held while idle: {held}"
    assert event == "ToolsListChanged"


def wait_for_no_sessions(*names: str) -> None:
    """PostgreSQL ends a closed session's backend a moment later: wait for it, so the
    test database can be dropped at the end of the run."""
    deadline = time.monotonic() + 10
    while any(server_connections(n) for n in names) and time.monotonic() < deadline:
        time.sleep(0.1)
