"""The official MCP conformance suite, directly and through ToolHub.

``@modelcontextprotocol/conformance`` (pinned in tests/node) runs its server scenarios
against ``tests/servers/everything_server.py`` (every fixture the scenarios name), then
against the live ToolHub (two uvicorn processes, a Celery worker) fronting that server,
registered, synced and granted over the REST API as an operator would. Every scenario
that passes directly must pass through ToolHub, except those docs/mcp-server.md lists
under "Conformance" with the reason; a listed scenario that passes is a failure too, so
the list only ever says what is true.

The CLI takes no headers: ``tests/node/bearer.mjs``, preloaded, gives each of its
requests the agent's token, as an operator's proxy would.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from registry.models import MCPServer
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import mcp as mcp_services
from registry.services import roles as role_services
from tests.executions.mcp_server.conftest import mcp_client
from tests.executions.test_mcp import free_port, wait_for_port
from tests.factories import make_token
from tests.node_packages import NODE_DIR, require_node

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[3]
SERVER = ROOT / "tests" / "servers" / "everything_server.py"
DOCS = ROOT / "docs" / "mcp-server.md"
TOKEN = f"everything-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def everything():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port), "--token", TOKEN],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run_suite(url: str, bearer: str, out: Path) -> dict[str, list[str]]:
    """Each scenario the suite ran: what its failed checks said (none: it passed)."""
    env = {
        **os.environ,
        "TOOLHUB_BEARER": bearer,
        "NODE_OPTIONS": f"--import {NODE_DIR / 'bearer.mjs'}",
    }
    cli = NODE_DIR / "node_modules" / ".bin" / "conformance"
    done = subprocess.run(
        [str(cli), "server", "--url", url, "-o", str(out)],
        cwd=NODE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    outcomes: dict[str, list[str]] = {}
    for checks in out.glob("server-*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        found = json.loads(checks.read_text())
        outcomes[scenario] = [
            f"{check['id']}: {check.get('errorMessage')}"
            for check in found
            if check["status"] not in ("SUCCESS", "INFO", "WARNING")
        ] or ([] if found else ["no checks"])
    assert outcomes, f"the suite ran no scenario:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return outcomes


def documented_failures() -> dict[str, str]:
    """The scenarios docs/mcp-server.md says fail through ToolHub, with why."""
    text = DOCS.read_text()
    section = text.split("## Conformance", 1)[1].split("\n## ", 1)[0]
    return {
        match[1]: match[2].strip()
        for match in re.finditer(r"^\| `([a-z0-9-]+)` \| (.+?) \|$", section, re.M)
    }


def operator_registers(live, admin_token: str, upstream: str) -> None:
    """Register and sync the server over the REST API, as an operator would."""
    api = httpx.Client(
        base_url=live.url("/api/v1"),
        headers={"Authorization": f"Bearer {admin_token}"},
        timeout=60,
    )
    server = api.post(
        "/mcp-servers",
        json={
            "name": "everything",
            "transport": "streamable_http",
            "url": upstream,
            "auth_token": TOKEN,
            "tool_prefix": "",  # the scenarios call the upstream's own names
        },
    )
    assert server.status_code == 201, server.text
    synced = api.post(f"/mcp-servers/{server.json()['id']}/sync")
    assert synced.status_code == 200 and synced.json()["ok"], synced.text


@pytest.fixture
def fronted(live_toolhub, everything, superuser, owner):
    """The live ToolHub with the everything-server registered: it and the token of an agent
    that may read and run every tool. The operator is a superuser and the grants are made
    here, not over the API: the rights of a role and the grants name content types, whose
    ids the live processes keep from the first test, and each test empties the tables
    (they are made again with other ids)."""
    operator_registers(live_toolhub, make_token(superuser), everything)
    role = role_services.role_create(actor=None, name="conformance")
    server = MCPServer.objects.get(name="everything")
    for tool in mcp_services.mcp_server_tools(server):
        grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    agent = agent_services.agent_create(
        actor=None, name="conformance-agent", owner=owner, role_ids=[role.pk]
    )
    return live_toolhub, make_token(agent.user)


def test_every_scenario_that_passes_directly_passes_through_toolhub(fronted, everything, tmp_path):
    require_node("@modelcontextprotocol/conformance", "The MCP conformance run")
    direct = run_suite(everything, TOKEN, tmp_path / "direct")
    assert not any(direct.values()), {name: why for name, why in direct.items() if why}

    live, agent_token = fronted
    through = run_suite(live.url("/mcp"), agent_token, tmp_path / "through")

    documented = documented_failures()
    failing = {name for name, why in through.items() if why}
    assert set(through) == set(direct)
    undocumented = {name: through[name] for name in failing - set(documented)}
    assert not undocumented, f"fail through ToolHub, undocumented: {undocumented}"
    assert set(documented) - failing == set(), "documented as failing, but pass"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_upstreams_log_messages_reach_a_caller_that_asked_for_them(fronted, mode):
    """2025: after ``logging/setLevel``; 2026-07-28: the request's logLevel ``_meta``. The
    level filters: at ``warning`` the upstream's ``info`` lines are not relayed."""
    live, token = fronted
    heard: list[tuple[str, object]] = []

    async def on_log(params):
        heard.append((params.level, params.data))

    async def call(level):
        options = {"logging_callback": on_log}
        if mode == "auto":
            options["log_level"] = level
        async with mcp_client(live.url(), token, mode=mode, **options) as client:
            if mode == "legacy":
                await client.set_logging_level(level)
            return await client.call_tool("test_tool_with_logging", {})

    result = asyncio.run(call("debug"))
    assert result.is_error is False and result.content[0].text == "Logged three messages."
    assert heard == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]
    heard.clear()
    asyncio.run(call("warning"))
    assert heard == []
