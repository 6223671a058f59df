"""An authenticated request answered before its body was read leaves the keep-alive
connection usable.

Run against gunicorn as deployed (uvicorn workers serving toolhub.asgi) and with
gunicorn's threaded WSGI worker (gthread), which drains at most 64 KiB of an unread
body and otherwise closes the connection it announced as keep-alive.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAKE_TOKEN = (
    "from django.contrib.auth import get_user_model; "
    "from registry.services.tokens import token_issue; "
    "user = get_user_model().objects.create_user('keepalive-user'); "
    "print(token_issue(actor=None, user=user, name='t')[1])"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# As docker-compose.yml runs it, and the WSGI application under gunicorn's threads.
SERVERS = {
    "asgi": ("toolhub.asgi:application", "--config", "python:toolhub.gunicorn_conf", "-w", "1"),
    "wsgi": ("toolhub.wsgi", "-w", "1", "--threads", "2"),
}


@pytest.fixture(scope="module", params=sorted(SERVERS))
def server(tmp_path_factory, request):
    """A migrated database, a token and the server, once per server kind for the file: the
    tests only send requests, and each test opens connections of its own."""
    tmp_path = tmp_path_factory.mktemp(f"keepalive-{request.param}")
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(TOOLHUB_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="toolhub.settings")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    made = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", MAKE_TOKEN],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    token = made.stdout.strip().splitlines()[-1]
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "-b", f"127.0.0.1:{port}"),
            *SERVERS[request.param],
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
        yield port, token, request.param
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


@pytest.mark.parametrize(
    ("path", "size", "status"),
    [
        # Answered without reading the body at all (no such execution).
        ("/api/v1/executions/6f1c8a2e-0000-4000-8000-000000000002/cancel", 1_000, 404),
        ("/api/v1/executions/6f1c8a2e-0000-4000-8000-000000000003/cancel", 500_000, 404),
        # A body past the limit (2 MiB): refused unread.
        ("/api/v1/executions", 3_000_000, 413),
    ],
)
def test_the_next_request_on_the_connection_is_answered(server, path, size, status):
    port, token, _ = server
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = b'{"tool": "x", "input_data": {"text": "' + b"a" * size + b'"}}'
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    connection.request("POST", path, body=body, headers=headers)
    answered = connection.getresponse()
    answered.read()
    assert answered.status == status
    connection.request("GET", "/healthz")
    assert connection.getresponse().status == 200


def test_a_request_line_past_the_limit_is_answered_as_the_document_says(server):
    """414 whichever server is in front: ToolHub's Error body under the uvicorn workers,
    gunicorn's own HTML under its WSGI workers (it refuses first); the document says both."""
    port, token, kind = server
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/api/schema/?format=json")
    document = json.loads(connection.getresponse().read())
    connection.close()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(
        "GET", "/api/v1/tools?search=" + "a" * 5000, headers={"Authorization": f"Bearer {token}"}
    )
    answered = connection.getresponse()
    answered.read()
    assert answered.status == 414
    content_type = answered.getheader("Content-Type")
    assert content_type == {"asgi": "application/json", "wsgi": "text/html"}[kind]
    documented = document["paths"]["/api/v1/tools"]["get"]["responses"]["414"]
    assert content_type in documented["content"]
