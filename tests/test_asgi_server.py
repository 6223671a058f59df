"""The web process as deployed: gunicorn, uvicorn workers, toolhub.asgi, on PostgreSQL.

Django's own ASGI handler runs every request in a thread of its own, so connections
kept per thread would open a PostgreSQL session per request and pile up until
PostgreSQL refuses clients; toolhub.asgi serves Django on a fixed pool of threads
(TOOLHUB_ASGI_DJANGO_THREADS), each keeping its connection.
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


def _serve(tmp_path, workers: int, **extra_env) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k != "TOOLHUB_DB_POOL_SIZE"},
        "DJANGO_SETTINGS_MODULE": "toolhub.settings_test",
        "DATABASE_URL": _database_url(),
        "ALLOWED_HOSTS": "127.0.0.1",
        "TOOLHUB_VAR_DIR": str(tmp_path / "var"),
        **extra_env,
    }
    # The command docker-compose.yml runs, on a free port.
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "toolhub.asgi:application"),
            *("--config", "python:toolhub.gunicorn_conf", "-b", f"127.0.0.1:{port}"),
            *("--workers", str(workers)),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            if _get(port, "/healthz") == 200:
                return proc, port
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise AssertionError("gunicorn did not start")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=20)


@pytest.fixture
def serve(tmp_path):
    """Start ToolHub's web process as deployed; stopped after the test."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL)")
    started = []

    def start(workers: int = 1, **extra_env) -> int:
        proc, port = _serve(tmp_path, workers, **extra_env)
        started.append(proc)
        return port

    yield start
    for proc in started:
        _stop(proc)


def _sessions_opened() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_requests_reuse_connections_instead_of_opening_one_each(serve):
    port = serve()
    before = _sessions_opened()
    # /readyz reads the database (and answers 503 when Redis is not there).
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(lambda _: _get(port, "/readyz"), range(REQUESTS)))
    assert set(statuses) <= {200, 503}, statuses  # 503 only when Redis is not configured
    time.sleep(0.6)  # pg_stat_database is updated by each backend every 500 ms at most
    opened = _sessions_opened() - before
    # One per request with a thread per request; at most one per Django thread here.
    assert opened <= 4, opened


def _scraped_healthz_requests(port: int, token: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    text = response.read().decode()
    assert response.status == 200, text[:200]
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("toolhub_http_requests_total{") and 'route="healthz"' in line
    )


def _send_until_every_worker_served(port: int, metrics_dir: Path, workers: int) -> int:
    """Send /healthz in concurrent rounds until each worker has written its counter
    file (the kernel may hand a quiet server's connections all to one worker);
    the number of requests sent."""
    sent = 0
    deadline = time.monotonic() + 30
    with ThreadPoolExecutor(max_workers=8) as pool:
        while True:
            statuses = list(pool.map(lambda _: _get(port, "/healthz"), range(16)))
            assert set(statuses) == {200}, statuses
            sent += len(statuses)
            pids = {path.stem.rsplit("_", 1)[-1] for path in metrics_dir.glob("counter_*.db")}
            if len(pids) >= workers or time.monotonic() > deadline:
                assert len(pids) == workers, pids
                return sent


def test_metrics_add_up_the_requests_of_every_uvicorn_worker(serve, tmp_path):
    metrics_dir = tmp_path / "prometheus"
    metrics_dir.mkdir()
    token = "metrics-scraper-token-for-this-test"
    port = serve(workers=2, PROMETHEUS_MULTIPROC_DIR=str(metrics_dir), TOOLHUB_METRICS_TOKEN=token)
    before = _scraped_healthz_requests(port, token)
    # Each worker writes its own files; the scrape merges them all.
    sent = _send_until_every_worker_served(port, metrics_dir, workers=2)
    assert _scraped_healthz_requests(port, token) - before == sent
