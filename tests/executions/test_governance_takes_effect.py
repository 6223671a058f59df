"""A governance change takes effect on the very next call, on PostgreSQL and on SQLite.

Processes keep registry reads in memory under the registry generation, which
database triggers move on every write (``registry/generation_triggers.py``). A
migration that rebuilds a table (SQLite does for many schema changes) drops its
triggers, and then an admin's change is ignored until a restart. These tests
check the triggers after all migrations, that a migrate puts back one that went
missing, and that changes made in the admin hold the next call by name. The
module runs on the suite's database, and once more on SQLite in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from registry import generation_triggers
from registry.models import Tool
from tests.conftest import token_client
from tests.executions.conftest import echo_caller
from tests.registry.test_admin import change_form_data

pytestmark = [pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


def test_every_table_the_registry_cache_reads_has_its_triggers_after_all_migrations():
    assert generation_triggers.missing(connection) == []


def _drop_trigger_on_tools() -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"DROP TRIGGER {generation_triggers.PG_NAME} ON registry_tool")
        else:
            cursor.execute(f"DROP TRIGGER {generation_triggers.PG_NAME}_registry_tool_1")


def test_a_migrate_puts_back_a_trigger_that_a_table_rebuild_dropped():
    _drop_trigger_on_tools()
    assert generation_triggers.missing(connection) != []

    call_command("migrate", verbosity=0)

    assert generation_triggers.missing(connection) == []


@pytest.fixture
def cast(upstream, allow_loopback, eager_tasks, superuser):
    cast = echo_caller(upstream, "governed", "governed_echo")
    admin = Client()
    admin.force_login(superuser)
    return {**cast, "client": token_client(cast["agent"].user), "admin": admin}


def call(cast):
    return cast["client"].post(
        "/api/v1/executions",
        {"tool": "governed_echo", "input_data": {"path": "echo"}, "wait": True},
        format="json",
    )


def save_in_admin(cast, **overrides) -> None:
    tool = Tool.objects.get(pk=cast["tool"].pk)
    response = cast["admin"].post(
        f"/admin/registry/tool/{tool.pk}/change/", change_form_data(tool, **overrides)
    )
    assert response.status_code == 302, response.content.decode()[:2000]


def test_ticking_requires_approval_in_the_admin_holds_the_very_next_call(cast):
    assert call(cast).json()["status"] == "succeeded"  # warms every process-level read

    save_in_admin(cast, requires_approval="on")

    response = call(cast)
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "pending_approval"


def test_unticking_is_active_in_the_admin_refuses_the_very_next_call(cast):
    assert call(cast).json()["status"] == "succeeded"

    save_in_admin(cast, is_active="")

    response = call(cast)
    assert response.status_code == 409, response.json()
    assert response.json()["error"]["code"] == "tool_inactive"


@pytest.mark.skipif(connection.vendor == "sqlite", reason="this run is the SQLite one")
def test_the_same_changes_take_effect_on_sqlite():
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "CI"}}
    env["TOOLHUB_TEST_EXPECT_SERVICES"] = "false"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-k",
            "not on_sqlite",
            str(Path(__file__).relative_to(ROOT)),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "4 passed" in run.stdout, run.stdout[-2000:]
