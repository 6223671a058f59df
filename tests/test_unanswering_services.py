"""Redis and a broker that accept connections but never answer do not hang the web process.

A black hole (tests/servers/black_hole.py) stands in for both; ToolHub is served by
gunicorn as deployed (uvicorn workers, toolhub.asgi) and with its threaded WSGI
worker (gthread) with two threads, where a request that hangs would soon leave
none to answer /healthz. Every request the tests make has a client
timeout: on code that hangs they fail, they do not hang.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from executions.models import Execution, ExecutionStatus
from executions.services import runner
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.factories import make_token, make_user
from tests.servers.black_hole import black_hole
from tests.workers import _database_url, require_broker

ROOT = Path(__file__).resolve().parent.parent
CLIENT_TIMEOUT = 20  # seconds: far past what any answer may take, short of a hang
# The default Redis and broker timeouts are 3 s: a refused call is answered in a few.
REFUSED_WITHIN = 8.0
THREADS = 2

pytestmark = pytest.mark.django_db(transaction=True)  # the server reads what the test writes


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _request(port: int, method: str, path: str, *, token: str = "", body=None):
    """(status, JSON body, seconds taken); raises on a client timeout."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
    try:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        connection.request(method, path, body=json.dumps(body) if body else None, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        return answer.status, json.loads(data) if data else None, time.monotonic() - started
    finally:
        connection.close()


@pytest.fixture
def hole():
    with black_hole() as server:
        yield server


@pytest.fixture
def caller(db):
    """A token with ``execute`` on an HTTP tool (the call never gets as far as the tool)."""
    require_broker()  # PostgreSQL shared with the server process
    owner = make_user("hang-owner")
    role = role_services.role_create(actor=None, name="hang-callers")
    agent = agent_services.agent_create(
        actor=None, name="hang-agent", owner=owner, role_ids=[role.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name="hang_tool",
        type="http",
        timeout_seconds=5,
        configs=[{"config_key": "base_url", "config_value": "http://127.0.0.1:9"}],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return {"token": make_token(agent.user), "tool": tool}


# As docker-compose.yml runs it, and the WSGI application under gunicorn's threads.
SERVERS = {
    "asgi": ("toolhub.asgi:application", "--config", "python:toolhub.gunicorn_conf"),
    "wsgi": ("toolhub.wsgi", "--threads", str(THREADS)),
}


@pytest.fixture(params=sorted(SERVERS))
def server(hole, caller, tmp_path, settings, request):
    """gunicorn (1 process) whose Redis and broker are the black hole."""
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "toolhub.settings_test",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": hole.url,
        "CELERY_BROKER_URL": hole.url,
        "ALLOWED_HOSTS": "127.0.0.1",
        "TOOLHUB_VAR_DIR": str(tmp_path / "var"),
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
    }
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "-b", f"127.0.0.1:{port}"),
            *SERVERS[request.param],
            *("-w", "1", "--timeout", "120"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _request(port, "GET", "/healthz")[0] == 200:  # a 400 means a bad setup
                    break
            except OSError:
                pass
            assert proc.poll() is None, "gunicorn exited"
            assert time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.2)
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _call(port: int, caller) -> tuple[int, dict, float]:
    body = {"tool": caller["tool"].name, "input_data": {}}
    return _request(port, "POST", "/api/v1/executions", token=caller["token"], body=body)


def test_readyz_answers_503_within_five_seconds_when_redis_and_the_broker_never_answer(
    server, hole
):
    status, body, took = _request(server, "GET", "/readyz")
    assert status == 503
    assert took < 5.0
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["broker"] != "ok"
    assert body["checks"]["cache"] != "ok"
    assert hole.accepted > 0  # it was the black hole that was asked


def test_a_call_the_broker_never_takes_is_refused_503_and_ends_failed_without_running(
    server, caller
):
    status, body, took = _call(server, caller)
    assert status == 503
    assert took < REFUSED_WITHIN
    assert body["error"]["code"] == "queue_unavailable"
    execution = Execution.objects.get(pk=body["error"]["execution_id"])
    assert execution.status == ExecutionStatus.FAILED
    assert execution.error_type == "queue_unavailable"
    assert execution.started_at is None  # never run
    # A message that reached the broker after all finds nothing to run.
    assert runner.execution_run(execution_id=execution.pk) is None
    assert Execution.objects.get(pk=execution.pk).status == ExecutionStatus.FAILED


def test_the_web_process_keeps_serving_after_calls_to_a_broker_that_never_answers(server, caller):
    calls = 2 * THREADS  # more than the server has threads
    with ThreadPoolExecutor(max_workers=calls) as pool:
        answers = list(pool.map(lambda _: _call(server, caller), range(calls)))
    assert [status for status, _, _ in answers] == [503] * calls
    assert all(body["error"]["code"] == "queue_unavailable" for _, body, _ in answers)
    status, _, took = _request(server, "GET", "/healthz")
    assert status == 200
    assert took < 2.0
    # Every call ended; none is left queued or running for anyone to pick up.
    assert not Execution.objects.filter(
        status__in=[ExecutionStatus.QUEUED, ExecutionStatus.RUNNING]
    ).exists()
    assert Execution.objects.filter(error_type="queue_unavailable").count() == calls


def test_the_usage_dashboard_answers_when_its_cache_never_does(superuser, hole, settings):
    """Computed afresh (and not kept) when the cache times out, never a hang or a 500."""
    from django.db import connection
    from django.test import Client

    if "RedisCache" not in settings.CACHES["default"]["BACKEND"]:
        pytest.skip("the cache is not Redis (set REDIS_URL)")
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": hole.url}}
    client = Client()
    client.force_login(superuser)
    answers = []

    def load() -> None:
        try:
            answers.append(client.get("/admin/dashboard/"))
        except Exception as exc:  # the test client raises what the view raised
            answers.append(exc)
        finally:
            connection.close()  # this thread's own database connection

    thread = threading.Thread(target=load)
    started = time.monotonic()
    thread.start()
    thread.join(timeout=CLIENT_TIMEOUT)
    assert not thread.is_alive(), "the dashboard hangs on a cache that never answers"
    assert getattr(answers[0], "status_code", answers[0]) == 200
    assert time.monotonic() - started < REFUSED_WITHIN
    assert hole.accepted > 0


def test_a_caller_waiting_on_a_redis_that_never_answers_is_answered_by_polling(hole, settings):
    """The wake-up (BLPOP) gives up after its own wait plus TOOLHUB_REDIS_TIMEOUT; the
    waiter then reads the row instead."""
    from executions.services import notify

    settings.REDIS_URL = hole.url
    settings.TOOLHUB_REDIS_TIMEOUT = 0.5
    notify._redis.cache_clear()  # clients are built once per process from the settings
    done_at = time.monotonic() + 0.5
    answers = []
    thread = threading.Thread(
        target=lambda: answers.append(
            notify.wait_done("e-1", 30.0, lambda: time.monotonic() >= done_at)
        )
    )
    started = time.monotonic()
    try:
        thread.start()
        thread.join(timeout=CLIENT_TIMEOUT)
        assert not thread.is_alive(), "the waiter hangs on a Redis that never answers"
    finally:
        hole.stop()  # ends a hung wait, so the thread ends too
        thread.join(timeout=10)
        notify._redis.cache_clear()
    assert answers == [True]
    # BLPOP waits at most 5 s; the socket 0.5 s more.
    assert time.monotonic() - started < 5.5 + 2.0
