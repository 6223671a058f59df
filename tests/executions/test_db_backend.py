"""The PostgreSQL backend whose per-request health check reads the registry generation.

Requests here go through Django's WSGI handler itself, not the test client:
the test client turns off the request signals that reset a connection's health
check, and those are what this backend is about.
"""

from __future__ import annotations

import io
import json
import sys

import psycopg
import pytest
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from registry import snapshot
from registry.models import Tool
from registry.services import roles as role_services
from tests.conftest import make_token
from tests.executions.conftest import echo_caller

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
        reason="the PostgreSQL backend",
    ),
]


def other_session() -> psycopg.Connection:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params, autocommit=True)


def new_generation() -> None:
    """A registry change as another process makes it (any watched write bumps the row)."""
    with other_session() as session:
        session.execute("UPDATE toolhub_registry_generation SET value = value + 1 WHERE id = 1")


def stored_generation() -> int:
    with other_session() as session:
        return session.execute(snapshot.GENERATION_SQL).fetchone()[0]


def request_boundary() -> None:
    """What Django does at the end and start of every request (``close_old_connections``)."""
    connection.close_if_unusable_or_obsolete()


@pytest.fixture
def warm_connection():
    assert connection.health_check_enabled is not None
    connection.ensure_connection()
    connection.health_check_enabled = True
    request_boundary()


def test_the_health_check_read_is_the_generation_read(warm_connection):
    with CaptureQueriesContext(connection) as captured:
        seen = snapshot.generation()
    assert seen == stored_generation()
    assert captured.captured_queries == []  # taken from the check, not read again
    # Taken once: a second read in the same request asks the database.
    with CaptureQueriesContext(connection) as captured:
        assert snapshot.generation() == seen
    assert len(captured.captured_queries) == 1


def test_a_check_run_for_another_query_is_not_used(warm_connection):
    Tool.objects.count()  # the request's first database use: the check runs for it
    before = stored_generation()
    new_generation()  # a change after that check, before the request reads the generation
    assert snapshot.generation() == before + 1


def test_the_requests_own_registry_write_is_seen(warm_connection, django_user_model):
    before = stored_generation()
    with transaction.atomic():
        role_services.role_create(actor=None, name="made-in-this-request")
    assert snapshot.generation() not in (None, before)
    assert snapshot.generation() == stored_generation()


def test_a_dead_connection_is_replaced_before_use(warm_connection):
    old_pid = connection.connection.info.backend_pid
    with other_session() as session:
        session.execute("SELECT pg_terminate_backend(%s)", [old_pid])
    request_boundary()
    assert snapshot.generation() == stored_generation()
    assert connection.connection.info.backend_pid != old_pid


def test_inside_a_transaction_the_check_is_djangos(warm_connection):
    connection.set_autocommit(False)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        connection.take_checked_generation()  # what set_autocommit's own check read
        connection.health_check_done = False
        connection.close_if_health_check_failed()
        assert connection.checked_generation is snapshot.NOT_CHECKED
        assert connection.connection is not None
    finally:
        connection.rollback()
        connection.set_autocommit(True)


# --------------------------------------------------------------------------- real requests


@pytest.fixture
def caller(upstream, allow_loopback, eager_tasks):
    cast = echo_caller(upstream, "backend", "backend_echo")
    return {"token": make_token(cast["agent"].user), "agent": cast["agent"]}


def wsgi_call(token: str) -> tuple[str, dict]:
    body = json.dumps({"tool": "backend_echo", "input_data": {"path": "echo"}, "wait": True})
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/api/v1/executions",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "testserver",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.input": io.BytesIO(body.encode()),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
    }
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"] = status

    response = WSGIHandler()(environ, start_response)
    try:
        content = b"".join(response)
    finally:
        response.close()
    return answer["status"], json.loads(content)


def test_a_call_after_a_database_restart_succeeds(caller, warm_connection):
    status, body = wsgi_call(caller["token"])
    assert status.startswith("200"), body
    with other_session() as session:  # a database restart, as this process sees it
        session.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])
    status, body = wsgi_call(caller["token"])
    assert status.startswith("200"), body
    assert body["status"] == "succeeded"


def test_a_change_between_requests_is_seen_by_the_next_one(caller, warm_connection):
    status, _ = wsgi_call(caller["token"])
    assert status.startswith("200")
    # Another process deactivates the agent: its generation write reaches the
    # next request's health check, which is the read the token check uses.
    with other_session() as session:
        session.execute(
            "UPDATE registry_agent SET is_active = false WHERE id = %s", [caller["agent"].pk]
        )
    status, body = wsgi_call(caller["token"])
    assert status.startswith("401"), body
    assert "inactive" in json.dumps(body).lower(), body


def test_the_test_process_keeps_djangos_connection_per_thread():
    """Only a serving process (toolhub.asgi, toolhub.wsgi, a Celery worker) puts the bounded
    pool in place; a test module that imports one of them at collection would switch every
    test of the run to the pool (a connection closed at each request's end)."""
    database = connection.settings_dict
    assert "pool" not in database.get("OPTIONS", {})
    assert database["CONN_MAX_AGE"] != 0
