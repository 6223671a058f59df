"""A live ToolHub for MCP clients: two uvicorn processes serving ``toolhub.asgi:application``
on the test database, with a real Celery worker and the test's Redis."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import httpx
import httpx2
import pytest
from django.conf import settings
from django.db import close_old_connections
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from executions.models import Approval, Execution
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.factories import make_token
from tests.workers import _database_url, celery_worker, require_broker

ROOT = Path(__file__).resolve().parents[3]
TRUSTED_ORIGIN = "http://trusted.example"
CLIENT_INFO = Implementation(name="toolhub-tests", version="9.9")


@dataclass
class LiveToolHub:
    ports: list[int]
    procs: list[subprocess.Popen]

    def url(self, path: str = "/mcp", index: int = 0) -> str:
        return f"http://127.0.0.1:{self.ports[index]}{path}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"uvicorn did not listen on {port}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def toolhub_env(**overrides: str) -> dict[str, str]:
    """The environment of a live ToolHub on the test database and Redis."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "toolhub.settings_test",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": settings.REDIS_URL or "",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "TOOLHUB_MCP_ALLOWED_ORIGINS": TRUSTED_ORIGIN,
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        **overrides,
    }


@contextmanager
def uvicorn_processes(env: dict[str, str], count: int = 2, application_name: str | None = None):
    """``count`` uvicorn processes serving ``toolhub.asgi:application``, stopped after;
    with ``application_name``, process i's database sessions are named ``<it>-<i>``
    (``pg_stat_activity.application_name``)."""
    ports, procs = [_free_port() for _ in range(count)], []
    try:
        for index, port in enumerate(ports):
            own = dict(env)
            if application_name:
                own["DATABASE_URL"] += f"?application_name={application_name}-{index}"
            cmd = [sys.executable, "-m", "uvicorn", "toolhub.asgi:application"]
            cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env=own, start_new_session=True))
        for port, proc in zip(ports, procs, strict=True):
            _wait_listening(port, proc)
        yield LiveToolHub(ports, procs)
    finally:
        for proc in procs:
            _stop(proc)


@pytest.fixture(scope="session")
def live_toolhub_web(django_db_setup, django_db_blocker):
    """The two uvicorn processes, started once per test process for every file that uses
    them (tests/conftest.py keeps those files in one process): they consume no queue and
    keep nothing a test depends on but what is in the database and Redis."""
    with django_db_blocker.unblock():
        require_broker()
        env = toolhub_env(
            TOOLHUB_INLINE_WAIT="false",  # every call runs on the worker
            TOOLHUB_EGRESS_ALLOW="127.0.0.1/32",
            TOOLHUB_MCP_PAGE_SIZE="2",
            TOOLHUB_MCP_APPROVAL_ROUND="1",
            TOOLHUB_MCP_APPROVAL_WAIT="30",
            TOOLHUB_MCP_BODY_TIMEOUT="1",
            TOOLHUB_MCP_REQUEST_STATE_TTL="5",
            TOOLHUB_MCP_SESSIONS_PER_TOKEN="3",
        )
        with uvicorn_processes(env) as live:
            yield live


@pytest.fixture(scope="module")
def live_toolhub(live_toolhub_web, django_db_blocker):
    """The live ToolHub with its Celery worker. The worker is the module's: a worker left
    running would take the tasks of a later file that expects none to run."""
    with django_db_blocker.unblock(), celery_worker():
        yield live_toolhub_web


@asynccontextmanager
async def mcp_client(url: str, token: str | None, mode: str = "legacy", transport=None, **kw):
    """The official SDK client over streamable HTTP, with the agent token as Bearer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(10, read=60), transport=transport
    )
    stream = streamable_http_client(url, http_client=http)
    async with Client(stream, mode=mode, client_info=CLIENT_INFO, **kw) as client:
        yield client


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


def rpc(url: str, token: str | None, method: str, params=None, *, rpc_id=1, headers=None):
    """One raw JSON-RPC POST; the answer and the JSON-RPC messages it carried."""
    sent = {"Accept": "application/json, text/event-stream", **(headers or {})}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if rpc_id is not None:
        body["id"] = rpc_id
    response = httpx.post(url, json=body, headers=sent, timeout=30)
    return response, messages(response)


def messages(response) -> list[dict]:
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        return [response.json()]
    if kind.startswith("text/event-stream"):
        return [
            json.loads(line[5:].strip())
            for line in response.text.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
    return []


# --------------------------------------------------------------------------- a world of tools


CANARY = "canary-mcp-secret-51d0c2"
EXECUTABLE = {"alpha", "bravo", "charlie"}


def echo_tool(upstream, name: str, **fields):
    return tool_services.tool_create(
        actor=None,
        name=name,
        type="http",
        timeout_seconds=10,
        description=f"Echo as {name}",
        parameters=[
            {"name": "path", "type": "string", "required": True},
            {"name": "method", "type": "string", "parameter_type": "output"},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/echo/{path}"},
            {"config_key": "auth_type", "config_value": "bearer_token"},
            {"config_key": "bearer_token", "config_value": CANARY, "is_secret": True},
        ],
        **fields,
    )


@pytest.fixture
def world(live_toolhub, upstream, owner, approver_user, approvers_role):
    role = role_services.role_create(actor=None, name="mcp-callers")
    agent = agent_services.agent_create(
        actor=None, name="mcp-agent", owner=owner, role_ids=[role.pk]
    )
    tools = {
        name: echo_tool(
            upstream, name, tool_metadata={"safety": "read_only", "title": name.title()}
        )
        for name in EXECUTABLE
    }
    for tool in tools.values():
        grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    readable = echo_tool(upstream, "delta_read_only")
    grant_services.grant_create(actor=None, role=role, action="read", tool=readable)
    echo_tool(upstream, "echo_hidden")  # no grant at all
    inactive = echo_tool(upstream, "foxtrot_inactive")
    grant_services.grant_create(actor=None, role=role, action="execute", tool=inactive)
    tool_services.tool_deactivate(actor=None, tool=inactive)
    gated = echo_tool(upstream, "golf_gated", requires_approval=True)
    grant_services.grant_create(actor=None, role=role, action="execute", tool=gated)
    grant_services.grant_create(actor=None, role=approvers_role, action="approve", tool=gated)
    return SimpleNamespace(
        live=live_toolhub,
        url=live_toolhub.url(),
        agent=agent,
        role=role,
        token=make_token(agent.user),
        tools=tools,
        gated=gated,
        approver=approver_user,
        upstream=upstream,
    )


def latest(**filters) -> Execution:
    close_old_connections()
    return Execution.objects.filter(**filters).order_by("-created_at").first()


def approve_when_pending(world, timeout: float = 20.0) -> None:
    """The approver approves the gated call as soon as it waits (another thread)."""
    from executions.services.approvals import approval_decide

    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            approval = Approval.objects.filter(execution__tool=world.gated).first()
            if approval is not None:
                approval_decide(actor=world.approver, approval=approval, approve=True)
                return
            time.sleep(0.2)
        raise AssertionError("no approval appeared")
    finally:
        close_old_connections()
