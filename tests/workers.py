"""Starting a real Celery worker for tests, against the test database and the real broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings

ROOT = Path(__file__).resolve().parent.parent
ALL_QUEUES = "http,database,mcp,python,command,default"
EXPECT_SERVICES = os.environ.get("TOOLHUB_TEST_EXPECT_SERVICES", "").lower() == "true"


def require_broker() -> None:
    problem = None
    if connection.vendor != "postgresql":
        problem = "a real worker needs PostgreSQL (SQLite is not shared across processes)"
    elif not settings.CELERY_BROKER_URL:
        problem = "no broker configured (set REDIS_URL)"
    if problem:
        if EXPECT_SERVICES:
            pytest.fail(f"Real-worker tests expected but {problem}.")
        pytest.skip(problem)


def _database_url() -> str:
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


@contextmanager
def celery_worker(
    *,
    concurrency: int = 2,
    extra_env: dict | None = None,
    inline: frozenset = frozenset(),
    queues: str = ALL_QUEUES,
    purge: bool = True,
):
    """A worker process consuming every executor queue (or ``queues``); yields the Popen.
    Always stopped. The queues are emptied first unless ``purge`` is false.

    While it runs, calls whose caller waits go to the worker too (``inline``:
    the executor kinds that still run in the test process, none by default).
    """
    with override_settings(TOOLHUB_INLINE_WAIT=inline):
        with _celery_worker(
            concurrency=concurrency, extra_env=extra_env, queues=queues, purge=purge
        ) as proc:
            yield proc


@contextmanager
def _celery_worker(
    *, concurrency: int, extra_env: dict | None, queues: str = ALL_QUEUES, purge: bool = True
):
    from toolhub.celery import app

    require_broker()
    if purge:
        app.control.purge()
    name = f"test-{uuid.uuid4().hex[:8]}@localhost"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "toolhub.settings_test",
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "REDIS_URL": settings.REDIS_URL or "",
        "TOOLHUB_EGRESS_ALLOW": "127.0.0.1/32",
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        **(extra_env or {}),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "toolhub",
            "worker",
            "-Q",
            queues,
            "-c",
            str(concurrency),
            "-n",
            name,
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {proc.returncode}")
            if app.control.ping(destination=[name], timeout=0.5):
                break
        else:
            raise RuntimeError("celery worker did not become ready in 60 s")
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def kill_worker(proc) -> None:
    """kill -9 the worker and its pool children, as a crash or OOM kill would."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")
