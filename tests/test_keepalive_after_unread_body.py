"""A request answered before its body was read leaves the keep-alive connection usable.

Run against gunicorn as deployed (gthread): gunicorn itself drains at most 64 KiB
of an unread body and otherwise closes the connection it announced as keep-alive.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(TOOLHUB_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="toolhub.settings")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "toolhub.wsgi", "-b", f"127.0.0.1:{port}"),
            *("-w", "1", "--threads", "2"),  # gthread, as deployed: keep-alive connections
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.1)
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


@pytest.mark.parametrize("size", [1_000, 500_000, 3_000_000])
def test_the_next_request_on_the_connection_is_answered(server, size):
    connection = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
    body = b'{"input_data": "' + b"a" * size + b'"}'
    headers = {"Content-Type": "application/json", "Authorization": "Bearer th_not_a_token"}
    connection.request("POST", "/api/v1/executions", body=body, headers=headers)
    refused = connection.getresponse()
    refused.read()
    assert refused.status == 401  # answered before the body was parsed
    connection.request("GET", "/healthz")
    assert connection.getresponse().status == 200
