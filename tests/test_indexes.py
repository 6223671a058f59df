"""The indexes of the two tables every call writes: each one costs each write.

Pinned so an index added by accident (a foreign key's default index, a
``db_index=True``) shows up here and is a decision, not a side effect.
"""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

EXECUTION_INDEXES = {
    "executions_execution_pkey",
    "exec_created_idx",
    "exec_tool_time_idx",
    "exec_agent_time_idx",
    "exec_tool_agent_time_idx",
    "exec_principal_time_idx",
    "exec_status_time_idx",
    "exec_role_time_idx",
    "exec_cached_from_idx",
    "exec_request_idx",
    "exec_trace_idx",  # partial: only calls that carry a trace id (OpenTelemetry on)
    "exec_oauth_client_idx",  # partial: only calls an OAuth client made
}
AUDIT_INDEXES = {
    "registry_auditevent_pkey",
    "registry_auditevent_occurred_at_12935bf0",
    "registry_auditevent_sequence_key",
    "registry_auditevent_uid_key",  # an event's identity is unique: copies are refused
    "audit_target_idx",
    "audit_actor_time_idx",
    "audit_action_time_idx",
    "audit_action_prefix_idx",
    "audit_actorname_time_idx",
    "audit_request_idx",
    "audit_unsealed_idx",
}


NO_ID = "00000000-0000-0000-0000-000000000000"


def indexes(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        return dict(cursor.fetchall())


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("index definitions are checked on PostgreSQL")


def test_execution_indexes():
    found = indexes("executions_execution")
    assert set(found) == EXECUTION_INDEXES
    # Rare columns: only the calls that have a value write an entry.
    assert found["exec_role_time_idx"].endswith("WHERE (role_id IS NOT NULL)")
    assert found["exec_cached_from_idx"].endswith("WHERE (cached_from_id IS NOT NULL)")
    assert "WHERE (NOT ((oauth_client_id)::text = ''::text))" in found["exec_oauth_client_idx"]


def test_audit_indexes():
    found = indexes("registry_auditevent")
    assert set(found) == AUDIT_INDEXES
    assert "varchar_pattern_ops" in found["audit_action_prefix_idx"]


def test_lookups_by_a_foreign_key_use_an_index():
    """What deleting a role or a cached execution runs: no sequential scan."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        for column, value in [
            ("role_id", 1),
            ("principal_id", 1),
            ("cached_from_id", NO_ID),
            ("tool_id", NO_ID),
            ("agent_id", NO_ID),
        ]:
            cursor.execute(
                f"EXPLAIN SELECT 1 FROM executions_execution WHERE {column} = %s",  # noqa: S608
                [value],
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "Index" in plan and "Seq Scan" not in plan, (column, plan)
