"""Fixtures for executor tests: recording upstream servers on 127.0.0.1."""

from __future__ import annotations

import pytest

from executions import egress
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.factories import make_user
from tests.servers.http_upstream import UpstreamServer


@pytest.fixture(scope="session")
def _upstream_server():
    with UpstreamServer() as server:
        yield server


@pytest.fixture(scope="session")
def _upstream_server_2():
    with UpstreamServer() as server:
        yield server


@pytest.fixture
def upstream(_upstream_server: UpstreamServer) -> UpstreamServer:
    """The recording server, with its records reset for this test."""
    _upstream_server.reset()
    return _upstream_server


@pytest.fixture
def upstream2(_upstream_server_2: UpstreamServer) -> UpstreamServer:
    """A second recording server (another port: another origin)."""
    _upstream_server_2.reset()
    return _upstream_server_2


@pytest.fixture(autouse=True)
def _fresh_dns_cache():
    egress.clear_dns_cache()
    yield
    egress.clear_dns_cache()


@pytest.fixture
def allow_loopback(settings):
    """Open the egress guard for 127.0.0.1 only (where the test servers listen)."""
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    return settings


# Pipeline fixtures: tasks in-process, or a real Celery worker on the real broker.


@pytest.fixture
def eager_tasks():
    """Run Celery tasks in-process for this test (the embedded default's behaviour)."""
    from toolhub.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = previous


def echo_caller(upstream: UpstreamServer, label: str, tool_name: str) -> dict:
    """An agent in its own role with ``execute`` on an http tool ``tool_name`` that
    calls ``upstream`` at ``/{path}`` (one required string input ``path``)."""
    owner = make_user(f"owner-{label}")
    role = role_services.role_create(actor=None, name=f"{label}-callers")
    agent = agent_services.agent_create(
        actor=None, name=f"agent-{label}", owner=owner, role_ids=[role.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name=tool_name,
        type="http",
        timeout_seconds=5,
        parameters=[{"name": "path", "type": "string", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}"},
        ],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return {"owner": owner, "role": role, "agent": agent, "tool": tool}
