"""Fixtures for executor tests: recording upstream servers on 127.0.0.1."""

from __future__ import annotations

import pytest

from executions import egress
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
