"""How many PostgreSQL connections a web process holds, and what a refused one answers.

The web process is served as deployed (gunicorn, one uvicorn worker, ``toolhub.asgi``:
Django on its threads and the MCP endpoint on the event loop) against the test
database, its connections named by its DATABASE_URL (``application_name``), so
``pg_stat_activity`` counts what that one process holds. A refusal is provoked with a role of its own whose ``CONNECTION LIMIT``
the test sets to 0 (PostgreSQL's "too many connections for role"), so the machine's
other clients are never starved.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import psycopg
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import close_old_connections, connection
from django.test import Client
from rest_framework.test import APIClient

from executions.models import Execution, ExecutionStatus
from executions.services import runner
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.factories import make_token
from tests.servers.http_upstream import UpstreamServer
from tests.test_asgi_server import _serve, _stop
from tests.workers import _database_url, celery_worker, require_broker, wait_for

pytestmark = pytest.mark.django_db(transaction=True)  # the server reads what the test writes

# toolhub.settings.database: TOOLHUB_DB_POOL_SIZE's default, the documented bound per web process.
DOCUMENTED_WEB_BOUND = 10
SERVER_NAME = "toolhub-server-under-test"
CLIENT_TIMEOUT = 60
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _request(port: int, method: str, path: str, *, headers=None, body=None):
    """(status, headers, body text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
    try:
        sent = {"Content-Type": "application/json", **(headers or {})}
        conn.request(
            method, path, body=json.dumps(body) if body is not None else None, headers=sent
        )
        response = conn.getresponse()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read().decode(),
        )
    finally:
        conn.close()


def _rest_call(port: int, token: str, tool: str):
    body = {"tool": tool, "input_data": {}, "wait": True}
    auth = {"Authorization": f"Bearer {token}"}
    return _request(port, "POST", "/api/v1/executions", headers=auth, body=body)


def _rest_call_in_process(token: str, tool: str, *, wait: bool) -> str:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    response = client.post(
        "/api/v1/executions", {"tool": tool, "input_data": {}, "wait": wait}, format="json"
    )
    assert response.status_code == 202, response.content
    return response.json()["id"]


def _mcp(port: int, token: str, method: str, params=None):
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    auth = {"Authorization": f"Bearer {token}", **MCP_HEADERS}
    return _request(port, "POST", "/mcp", headers=auth, body=message)


def _mcp_messages(text: str) -> list[dict]:
    lines = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    if not lines and text.strip().startswith("{"):
        return [json.loads(text)]
    return [json.loads(line) for line in lines if line]


@pytest.fixture(scope="module")
def upstream():
    with UpstreamServer() as server:
        yield server


@pytest.fixture
def callers(db, upstream, owner):
    """An agent that may execute slow HTTP tools, one of which waits for approval."""
    require_broker()  # PostgreSQL and Redis shared with the server process
    role = role_services.role_create(actor=None, name="pool-callers")
    agent = agent_services.agent_create(
        actor=None, name="pool-agent", owner=owner, role_ids=[role.pk]
    )
    tools = {}
    for name, path, extra in (
        ("slow_echo", "/slow/0.4", {}),
        ("gated_echo", "/slow/0.4", {"requires_approval": True}),
        ("slower_echo", "/slow/2", {}),
    ):
        tools[name] = tool_services.tool_create(
            actor=None,
            name=name,
            type="http",
            timeout_seconds=10,
            max_retries=0,
            configs=[
                {"config_key": "base_url", "config_value": upstream.url},
                {"config_key": "endpoint", "config_value": path},
            ],
            **extra,
        )
        grant_services.grant_create(actor=None, role=role, action="execute", tool=tools[name])
    return {"token": make_token(agent.user), "tools": tools}


def _server_env(tmp_path, **extra) -> dict:
    return {
        "REDIS_URL": settings.REDIS_URL or "",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL or "",
        "TOOLHUB_EGRESS_ALLOW": "127.0.0.1/32",
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "TOOLHUB_MCP_APPROVAL_WAIT": "4",
        **extra,
    }


@pytest.fixture
def serve(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL)")
    started = []

    def start(**extra_env) -> int:
        proc, port = _serve(tmp_path, 1, **_server_env(tmp_path, **extra_env))
        started.append(proc)
        return port

    yield start
    for proc in started:
        _stop(proc)


class BackendCounter:
    """Samples, on a connection of its own, how many backends the server under test
    holds, and keeps the largest count seen."""

    def __init__(self, name: str = SERVER_NAME):
        self.name = name
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._conn = psycopg.connect(_database_url(), autocommit=True)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def count(self) -> int:
        row = self._conn.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            [self.name],
        ).fetchone()
        return row[0]

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.count())
            self.samples += 1
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)
        self._conn.close()


def test_a_web_process_never_holds_more_connections_than_its_documented_bound_under_load(
    serve, callers
):
    """Far more concurrent REST and MCP calls (and MCP calls waiting for a person) than
    the process has connections: they share its pool instead of each holding one."""
    port = serve(DATABASE_URL=f"{_database_url()}?application_name={SERVER_NAME}")
    token, concurrency = callers["token"], 72

    def one(index: int):
        kind = index % 3
        if kind == 0:
            return "rest", _rest_call(port, token, "slow_echo")[0]
        tool = "slow_echo" if kind == 1 else "gated_echo"
        status, _, text = _mcp(port, token, "tools/call", {"name": tool, "arguments": {}})
        errors = [m["error"] for m in _mcp_messages(text) if "error" in m]
        return "mcp", status if not errors else errors[0]

    with BackendCounter() as counter, ThreadPoolExecutor(max_workers=concurrency) as pool:
        outcomes = list(pool.map(one, range(concurrency * 2)))
    print(f"peak backends of the web process: {counter.peak} ({counter.samples} samples)")
    assert {status for _, status in outcomes} <= {200, 201}, outcomes
    assert counter.peak <= DOCUMENTED_WEB_BOUND, counter.peak


def test_a_web_process_names_its_connections_as_the_web_process(serve, callers):
    """``toolhub-web`` in pg_stat_activity (DATABASE_URL names none), to count them by."""
    port = serve()
    assert _rest_call(port, callers["token"], "slow_echo")[0] == 200
    with BackendCounter("toolhub-web") as counter:
        assert 0 < counter.count() <= DOCUMENTED_WEB_BOUND


@pytest.mark.parametrize("surface", ["rest", "mcp"])
def test_connections_whose_backends_ended_while_pooled_are_replaced_before_use(
    serve, callers, surface
):
    """As after a database restart: every pooled connection's server end is gone (the
    backends terminated, and out of pg_stat_activity). The next calls are answered by
    fresh connections, not refused: the pool lends no connection whose socket has read
    its server's goodbye without checking it first."""
    port = serve(DATABASE_URL=f"{_database_url()}?application_name={SERVER_NAME}")
    token = callers["token"]

    def call():
        if surface == "rest":
            return _rest_call(port, token, "slow_echo")[0]
        status, _, text = _mcp(port, token, "tools/call", {"name": "slow_echo", "arguments": {}})
        results = [m.get("result", {}) for m in _mcp_messages(text)]
        return status if results and not results[-1].get("isError") else text

    with ThreadPoolExecutor(max_workers=4) as pool:  # several connections in the pool
        assert set(pool.map(lambda _: call(), range(8))) == {200}
    with BackendCounter() as counter:
        before = counter.count()
        assert before >= 1
        _sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            SERVER_NAME,
        )
        wait_for(lambda: counter.count() == 0, timeout=10)
    for _ in range(before + 2):  # more calls than there were dead connections
        assert call() == 200


# --------------------------------------------------------------------------- refusals


def _sql(statement: str, *params) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params or None)


def _refuse(role: str) -> None:
    """PostgreSQL refuses the role any new connection and drops those it has."""
    _sql(f"ALTER ROLE {role} CONNECTION LIMIT 0")
    _sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", role)


def _admit(role: str) -> None:
    _sql(f"ALTER ROLE {role} CONNECTION LIMIT -1")


def limited_role() -> str:
    """A login role of this test database's own: a role is machine-wide, and test processes
    (and other runs on the machine) each have a database, never one role between them."""
    name = re.sub(r"[^a-z0-9_]", "_", connection.settings_dict["NAME"].lower())
    return f"toolhub_limited_{name}"[:63]


@pytest.fixture
def limited_url(db):
    """A DATABASE_URL whose role the test can make PostgreSQL refuse (dropped after)."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL)")
    role = limited_role()
    _sql(f"DROP ROLE IF EXISTS {role}")
    _sql(f"CREATE ROLE {role} LOGIN")
    _sql(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
    _sql(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}")
    db_settings = connection.settings_dict
    host, port = db_settings.get("HOST") or "127.0.0.1", db_settings.get("PORT") or 5432
    yield f"postgres://{role}@{host}:{port}/{db_settings['NAME']}"
    close_old_connections()
    _admit(role)
    _sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", role)
    _sql(f"DROP OWNED BY {role}")
    _sql(f"DROP ROLE {role}")


def _admin_cookie() -> str:
    user = get_user_model().objects.create_superuser("pool-admin", password="pw-pool-admin")
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def _surfaces(port: int, token: str, cookie: str) -> dict:
    return {
        "rest": lambda: _rest_call(port, token, "slow_echo"),
        "mcp": lambda: _mcp(port, token, "tools/list"),
        "admin": lambda: _request(port, "GET", "/admin/", headers={"Cookie": cookie}),
    }


@pytest.mark.parametrize("surface", ["rest", "mcp", "admin"])
def test_a_refused_database_connection_is_a_503_with_retry_after_never_a_500(
    serve, callers, limited_url, surface
):
    port = serve(DATABASE_URL=limited_url, TOOLHUB_DB_POOL_TIMEOUT="1")
    ask = _surfaces(port, callers["token"], _admin_cookie())[surface]
    assert ask()[0] == 200  # the limited role serves every surface while it may connect
    _refuse(limited_role())
    status, headers, text = ask()
    assert status == 503, text[:500]
    assert headers.get("retry-after") == "5"
    if surface == "rest":
        assert json.loads(text)["error"]["code"] == "database_unavailable"
    elif surface == "mcp":
        assert json.loads(text)["error"] == "database_unavailable"
    else:
        assert "database cannot take this request" in text
    _admit(limited_role())  # and once PostgreSQL takes clients again, so does ToolHub
    # (within the Retry-After: the pool tries again with a backoff of its own)
    assert wait_for(lambda: ask()[0] == 200, timeout=15, interval=0.5)


def _running(tool_name: str, timeout: float = 20.0) -> Execution:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        close_old_connections()
        found = Execution.objects.filter(
            tool_name=tool_name, status=ExecutionStatus.RUNNING
        ).first()
        if found is not None:
            return found
        time.sleep(0.05)
    raise AssertionError("the call never started running")


def _refusal_of(surface: str, answer) -> dict:
    """The error a caller got: the REST error body, or the MCP tool result's."""
    status, headers, text = answer
    if surface == "rest":
        assert status == 503, text[:500]
        assert headers.get("retry-after") == "5"
        return json.loads(text)["error"]
    assert status == 200, text[:500]
    (message,) = [m for m in _mcp_messages(text) if "result" in m or "error" in m]
    assert message["result"]["isError"] is True, message
    error = message["result"]["structuredContent"]["error"]
    assert error["retry_after_seconds"] == 5
    return error


@pytest.mark.parametrize("surface", ["rest", "mcp"])
def test_an_admitted_call_whose_end_meets_a_refused_connection_ends_failed_not_lost(
    serve, callers, limited_url, upstream, surface
):
    """The upstream answers while PostgreSQL refuses the web process: the caller gets a
    503 naming the execution, and the record (still ``running``: nothing could write
    it) is ended ``failed`` by the reaper once its deadline passes."""
    port = serve(DATABASE_URL=limited_url, TOOLHUB_DB_POOL_TIMEOUT="1")
    token = callers["token"]
    with ThreadPoolExecutor(max_workers=1) as pool:
        if surface == "rest":
            answer = pool.submit(_rest_call, port, token, "slower_echo")
        else:
            params = {"name": "slower_echo", "arguments": {}}
            answer = pool.submit(_mcp, port, token, "tools/call", params)
        execution = _running("slower_echo")
        _refuse(limited_role())  # while the upstream still works on it (2 s)
        error = _refusal_of(surface, answer.result(timeout=CLIENT_TIMEOUT))
    assert error["code"] == "database_unavailable"
    assert error["execution_id"] == str(execution.pk)
    _admit(limited_role())
    execution.refresh_from_db()
    assert execution.status == ExecutionStatus.RUNNING  # nothing could write its end
    runner.executions_reap(now=execution.deadline_at + timedelta(seconds=1))
    execution.refresh_from_db()
    assert execution.status == ExecutionStatus.FAILED
    assert execution.error_type == "worker_lost"
    assert execution.finished_at is not None


# --------------------------------------------------------------------------- workers


def test_a_celery_worker_holds_at_most_its_pool_per_process_named_as_a_worker(callers):
    """Two prefork children run 16 calls queued at once: at most
    TOOLHUB_WORKER_DB_POOL_SIZE (2) connections each, named ``toolhub-worker``."""
    concurrency, per_process = 2, settings.TOOLHUB_WORKER_DB_POOL_SIZE
    with celery_worker(concurrency=concurrency), BackendCounter("toolhub-worker") as counter:
        ids = [_rest_call_in_process(callers["token"], "slow_echo", wait=False) for _ in range(16)]
        finished = wait_for(
            lambda: (
                not Execution.objects.filter(pk__in=ids)
                .exclude(status__in=[ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED])
                .exists()
            ),
            timeout=60,
        )
    assert finished
    assert set(Execution.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
        ExecutionStatus.SUCCEEDED
    }
    print(f"peak backends of the worker: {counter.peak}")
    assert 0 < counter.peak <= concurrency * per_process, counter.peak
