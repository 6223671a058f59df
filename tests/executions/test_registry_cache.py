"""The registry reads of the execution path are kept in memory, and never go stale.

Each process keeps tokens, roles, tools and rights under the registry
generation (registry/snapshot.py); database triggers change the generation on
every write to those tables. These tests warm the cache with a call, change
the registry through every kind of path (services, bulk ORM updates, raw SQL,
another database session) and check the very next call sees the change.
"""

from __future__ import annotations

import psycopg
import pytest
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from registry import snapshot
from registry.models import ApiToken, Tool, ToolGrant
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import tokens as token_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.executions.conftest import echo_caller

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def cast(upstream, allow_loopback, eager_tasks):
    cast = echo_caller(upstream, "cache", "cached_echo")
    return {**cast, "client": token_client(cast["agent"].user)}


def call(client, **input_data):
    return client.post(
        "/api/v1/executions",
        {"tool": "cached_echo", "input_data": input_data or {"path": "echo"}, "wait": True},
        format="json",
    )


def warm(cast) -> None:
    response = call(cast["client"])
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "succeeded"


def generation() -> int:
    value = snapshot.generation()
    assert value is not None
    return value


def test_a_warm_call_reads_no_registry_table(cast):
    warm(cast)
    # Warm: the generation, the execution INSERT + audit, the worker's read,
    # claim, final UPDATE + audit (and, with in-process tasks, the audit
    # chain's sealing after each commit): none of the registry tables.
    with CaptureQueriesContext(connection) as captured:
        warm(cast)
    if connection.vendor == "postgresql":  # SQLite's embedded sealing adds its own reads
        assert len(captured.captured_queries) <= 16
    registry_reads = [
        q["sql"]
        for q in captured.captured_queries
        if any(
            table in q["sql"]
            for table in (
                '"registry_tool"',
                '"registry_apitoken"',
                '"auth_group"',
                '"auth_permission"',
                '"registry_toolgroupobjectpermission"',
                '"registry_ratelimitrule"',
                '"registry_toolconfig"',
            )
        )
        and q["sql"].lstrip().upper().startswith("SELECT")
    ]
    assert registry_reads == []


def test_a_revoked_token_is_refused_on_the_next_call(cast):
    warm(cast)
    token = ApiToken.objects.get(user=cast["agent"].user)
    token_services.token_revoke(actor=None, token=token)
    response = call(cast["client"])
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]


def test_a_token_revoked_by_raw_sql_in_another_session_is_refused(cast):
    warm(cast)
    settings = connection.settings_dict
    with (
        psycopg.connect(
            host=settings["HOST"] or "127.0.0.1",
            port=settings["PORT"] or 5432,
            user=settings["USER"],
            dbname=settings["NAME"],
            autocommit=True,
        )
        if connection.vendor == "postgresql"
        else _same_connection() as other
    ):
        other.execute("UPDATE registry_apitoken SET revoked_at = now()")
    assert call(cast["client"]).status_code == 401


class _same_connection:
    """SQLite has no second server session: write through Django's connection instead."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, sql):
        with connection.cursor() as cursor:
            cursor.execute(sql.replace("now()", "CURRENT_TIMESTAMP"))


def test_a_removed_grant_is_refused_on_the_next_call(cast):
    warm(cast)
    grant = ToolGrant.objects.get(role=cast["role"], tool=cast["tool"])
    grant_services.grant_revoke(actor=None, grant=grant)
    assert call(cast["client"]).status_code == 404


def test_leaving_the_role_is_seen_on_the_next_call(cast):
    warm(cast)
    cast["agent"].user.groups.remove(cast["role"])
    assert call(cast["client"]).status_code == 404


def test_a_bulk_update_deactivating_the_tool_is_seen(cast):
    warm(cast)
    Tool.objects.filter(pk=cast["tool"].pk).update(is_active=False)  # no signals, no service
    assert call(cast["client"]).status_code == 409


def test_a_deactivated_agent_is_refused(cast):
    warm(cast)
    agent_services.agent_update(actor=None, agent=cast["agent"], data={"is_active": False})
    assert call(cast["client"]).status_code == 401


def test_a_schema_change_is_seen(cast):
    warm(cast)
    tool_services.parameter_create(
        actor=None, tool=cast["tool"], name="n", type="integer", required=True
    )
    response = call(cast["client"])
    assert response.status_code == 422
    assert [e["path"] for e in response.json()["error"]["details"]] == ["n"]
    assert call(cast["client"], path="echo", n="2").status_code == 200


def test_a_new_config_reaches_the_executor(cast):
    warm(cast)
    tool_services.config_set(
        actor=None, tool=cast["tool"], config_key="base_url", config_value="http://127.0.0.1:9"
    )
    body = call(cast["client"]).json()
    assert body["status"] == "failed", body  # nothing listens on port 9


def test_a_new_rate_limit_applies_to_the_next_call(cast):
    from registry.services import limits as limit_services

    warm(cast)
    limit_services.rate_limit_create(
        actor=None,
        tool=cast["tool"],
        max_requests=1,
        time_window_seconds=60,
        scope="global",
    )
    assert call(cast["client"]).status_code == 200
    assert call(cast["client"]).status_code == 429


def test_writes_that_decide_nothing_keep_the_generation(cast):
    before = generation()
    ApiToken.objects.filter(user=cast["agent"].user).update(last_used_at=timezone.now())
    cast["owner"].last_login = timezone.now()
    cast["owner"].save(update_fields=["last_login"])
    assert generation() == before
    Group.objects.filter(pk=cast["role"].pk).update(name="renamed-callers")
    assert generation() != before


def test_a_rolled_back_change_never_matches_again(cast):
    warm(cast)
    grant = ToolGrant.objects.get(role=cast["role"], tool=cast["tool"])
    before = generation()

    class Undo(Exception):
        pass

    with pytest.raises(Undo), transaction.atomic():
        grant_services.grant_revoke(actor=None, grant=grant)
        inside = generation()
        assert inside != before
        # Read (and keep) the registry as the transaction sees it: no grant.
        assert call(cast["client"]).status_code == 404
        raise Undo
    assert generation() == before
    # What was kept under the rolled-back generation is never used again.
    assert call(cast["client"]).status_code == 200


def test_the_cache_can_be_turned_off(cast, settings):
    settings.TOOLHUB_REGISTRY_CACHE = False
    warm(cast)
    with CaptureQueriesContext(connection) as captured:
        warm(cast)
    assert any('"registry_apitoken"' in q["sql"] for q in captured.captured_queries)


def test_unknown_names_are_not_kept(cast):
    entries = snapshot.current()
    for name in ("no_such_tool", "x" * 100_000):
        response = cast["client"].post(
            "/api/v1/executions", {"tool": name, "input_data": {}}, format="json"
        )
        assert response.status_code == 404
    assert snapshot.current() is entries
    assert not any(
        isinstance(key, tuple) and key[0] == "tool-name" and entries[key] is None for key in entries
    )
    assert Tool._meta.get_field("name").max_length == snapshot._NAME_MAX


def test_token_issue_and_sync_status_keep_the_generation(cast):
    from registry.models import MCPServer
    from tests.factories import make_token

    server = MCPServer.objects.create(
        name="cache-mcp", transport="streamable_http", url="http://127.0.0.1:9/mcp"
    )
    before = generation()
    make_token(cast["agent"].user, name="second")
    MCPServer.objects.filter(pk=server.pk).update(last_synced_at=timezone.now(), last_sync_error="")
    assert generation() == before
    MCPServer.objects.filter(pk=server.pk).update(url="http://127.0.0.1:10/mcp")
    assert generation() != before
    # The stdio environment is what a call reads too.
    before = generation()
    MCPServer.objects.filter(pk=server.pk).update(encrypted_env="changed")
    assert generation() != before
