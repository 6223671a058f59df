"""``Idempotency-Key``: once a call is admitted, its key is bound to that execution for good.

Real PostgreSQL transactions (each request thread has its own connection), the
real shared cache and a recording upstream on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection

from executions.models import Execution
from executions.services import runner
from executions.services.runner import redacting
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.executions.conftest import echo_caller

pytestmark = [pytest.mark.django_db(transaction=True)]

URL = "/api/v1/executions"


@pytest.fixture
def caller(upstream, allow_loopback, eager_tasks):
    return echo_caller(upstream, "idem", "keyed_echo")


def keyed_post(client, key: str, body: dict, *, patience: float = 30.0):
    """POST as a careful client does: while the key's first request is being decided
    (409), try again a moment later."""
    deadline = time.monotonic() + patience
    while True:
        response = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
        if response.status_code != 409 or time.monotonic() > deadline:
            return response
        time.sleep(0.02)


def in_threads(count: int, work) -> list:
    """Run ``work(index)`` in ``count`` threads started together; their results in order."""
    results: list = [None] * count
    start = threading.Barrier(count)

    def run(index: int) -> None:
        try:
            start.wait()
            results[index] = work(index)
        except Exception as exc:  # reported by the assertions, not lost in the thread
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def test_thirty_concurrent_requests_with_one_key_run_the_tool_once_even_when_it_fails(
    caller, upstream, monkeypatch
):
    # Something of ours fails after the upstream answered (here: the redaction step).
    def broken(*args, **kwargs):
        raise RuntimeError("failure after the tool ran")

    monkeypatch.setattr(redacting.CallSecrets, "result", broken)
    clients = [token_client(caller["agent"].user) for _ in range(30)]
    key = f"order-{uuid.uuid4().hex}"
    body = {"tool": "keyed_echo", "input_data": {"path": "echo"}, "wait": True}

    responses = in_threads(30, lambda i: keyed_post(clients[i], key, body))

    assert [r for r in responses if isinstance(r, Exception)] == []
    # The first answers the failure; a retry made while it ran replays it as it stood.
    assert {r.status_code for r in responses} <= {200, 202}, [r.content for r in responses]
    executions = Execution.objects.filter(tool_name="keyed_echo")
    assert executions.count() == 1 and len(upstream.requests) == 1
    execution = executions.get()
    # Not left running for the reaper: ended as a failure of ours.
    assert execution.status == "failed" and execution.error_type == "internal_error"
    assert {r.json()["id"] for r in responses} == {str(execution.pk)}
    assert sum(r.get("Idempotent-Replayed") == "true" for r in responses) == 29
    again = keyed_post(clients[0], key, body)
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.json()["status"] == "failed" and len(upstream.requests) == 1


def test_a_retry_after_the_web_process_died_mid_call_replays_the_reaped_failure(
    upstream, allow_loopback, eager_tasks
):
    caller = echo_caller(upstream, "dying", "slow_echo")
    tool_services.config_set(
        actor=None, tool=caller["tool"], config_key="endpoint", config_value="/slow/3"
    )
    client = token_client(caller["agent"].user)
    key = f"order-{uuid.uuid4().hex}"
    body = {"tool": "slow_echo", "input_data": {"path": "x"}, "wait": True}
    first: list = []
    # The first request: admitted, its key stored, then its process stops answering
    # (it is still inside the upstream call when the reaper gives up on it).
    thread = threading.Thread(
        target=lambda: (first.append(keyed_post(client, key, body)), connection.close())
    )
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not Execution.objects.filter(tool_name="slow_echo", status="running").exists():
            assert time.monotonic() < deadline, "the first call never started"
            time.sleep(0.02)
        execution = Execution.objects.get(tool_name="slow_echo")
        reaped = runner.executions_reap(now=execution.deadline_at + timedelta(seconds=1))
        assert reaped["failed"] == 1

        retry = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY=key)

        assert retry.status_code == 200, retry.content
        assert retry["Idempotent-Replayed"] == "true"
        assert retry.json()["id"] == str(execution.pk)
        assert retry.json()["status"] == "failed" and retry.json()["error_type"] == "worker_lost"
    finally:
        thread.join(30)
    assert Execution.objects.filter(tool_name="slow_echo").count() == 1
    assert len(upstream.requests) == 1


def test_a_secret_saved_before_text_was_checked_does_not_crash_the_calls(caller, upstream):
    """A secret holding an unpaired surrogate (stored before such text was refused)."""
    from registry import crypto
    from registry.models import ToolConfig

    ToolConfig.objects.create(
        tool=caller["tool"],
        config_key="legacy_secret",
        is_secret=True,
        encrypted_value=crypto.fernet().encrypt(json.dumps("x\udfffy").encode()).decode(),
    )
    client = token_client(caller["agent"].user)
    body = {"tool": "keyed_echo", "input_data": {"path": "echo"}, "wait": True}
    response = client.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "succeeded"
    assert not Execution.objects.filter(status="running").exists()
