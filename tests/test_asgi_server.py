"""The web process as deployed: gunicorn, uvicorn workers, toolhub.asgi, on PostgreSQL.

Under ASGI every request runs in a thread of its own. Connections kept per thread
would open a PostgreSQL session per request and pile up until PostgreSQL refuses
clients; toolhub.asgi turns on a connection pool per process instead.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.db import connection

from tests.workers import _database_url

ROOT = Path(__file__).resolve().parent.parent
REQUESTS = 60

pytestmark = pytest.mark.django_db(transaction=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@pytest.fixture
def asgi_server(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL)")
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k != "TOOLHUB_DB_POOL_SIZE"},
        "DJANGO_SETTINGS_MODULE": "toolhub.settings_test",
        "DATABASE_URL": _database_url(),
        "ALLOWED_HOSTS": "127.0.0.1",
        "TOOLHUB_VAR_DIR": str(tmp_path / "var"),
    }
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "toolhub.asgi:application"),
            *("--config", "python:toolhub.gunicorn_conf", "-w", "1", "-b", f"127.0.0.1:{port}"),
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
                if _get(port, "/healthz") == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None, "gunicorn exited"
            assert time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.2)
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def _sessions_opened() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_requests_borrow_pooled_connections_instead_of_opening_one_each(asgi_server):
    before = _sessions_opened()
    # /readyz reads the database (and answers 503 when Redis is not there).
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(lambda _: _get(asgi_server, "/readyz"), range(REQUESTS)))
    assert set(statuses) <= {200, 503}, statuses  # 503 only when Redis is not configured
    time.sleep(0.6)  # pg_stat_database is updated by each backend every 500 ms at most
    opened = _sessions_opened() - before
    # One per request without the pool; at most the pool's size (16) with it.
    assert opened <= 16, opened
