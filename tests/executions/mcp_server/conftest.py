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
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import httpx2
import pytest
from django.conf import settings
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from tests.workers import _database_url, celery_worker, require_broker

ROOT = Path(__file__).resolve().parents[3]
TRUSTED_ORIGIN = "http://trusted.example"
CLIENT_INFO = Implementation(name="toolhub-tests", version="9.9")


@dataclass
class LiveToolHub:
    ports: list[int]

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


@pytest.fixture(scope="module")
def live_toolhub(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        require_broker()
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "toolhub.settings_test",
            "DATABASE_URL": _database_url(),
            "REDIS_URL": settings.REDIS_URL or "",
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "TOOLHUB_MCP_ALLOWED_ORIGINS": TRUSTED_ORIGIN,
            "TOOLHUB_INLINE_WAIT": "false",  # every call runs on the worker
            "TOOLHUB_EGRESS_ALLOW": "127.0.0.1/32",
            "TOOLHUB_MCP_PAGE_SIZE": "2",
            "TOOLHUB_MCP_APPROVAL_ROUND": "1",
            "TOOLHUB_MCP_APPROVAL_WAIT": "30",
            "TOOLHUB_MCP_BODY_TIMEOUT": "1",
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        }
        with celery_worker():
            ports, procs = [_free_port(), _free_port()], []
            try:
                for port in ports:
                    cmd = [sys.executable, "-m", "uvicorn", "toolhub.asgi:application"]
                    cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
                    procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True))
                for port, proc in zip(ports, procs, strict=True):
                    _wait_listening(port, proc)
                yield LiveToolHub(ports)
            finally:
                for proc in procs:
                    _stop(proc)


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
