"""Execution exports: the columns of the execution JSON, streamed as CSV or JSON Lines.

The writers themselves are in ``registry.exports`` (the audit log, which lives
in ``registry``, exports through them too, and ``registry`` never imports
``executions``). ``sealed_secrets`` and ``raw_input`` are never exported.
"""

from __future__ import annotations

from registry.exports import FORMATS, Column, export_response

# Same names and order as ExecutionSerializer (without its "links").
EXECUTION_COLUMNS = [
    Column("id", "id"),
    Column("tool_id", "tool_id"),
    Column("tool_name", "tool_name"),
    Column("tool_version", "tool_version"),
    Column("agent_id", "agent_id"),
    Column("principal", "principal_name"),
    Column("role_id", "role_id"),
    Column("roles_used", "roles_used", is_json=True),
    Column("status", "status"),
    Column("reason_code", "reason_code"),
    Column("input_data", "input_data", is_json=True),
    Column("output_data", "output_data", is_json=True),
    Column("output_truncated", "output_truncated"),
    Column("error_type", "error_type"),
    Column("error_message", "error_message"),
    Column("upstream_status", "upstream_status"),
    Column("guard_decisions", "guard_decisions", is_json=True),
    Column("attempts", "attempts"),
    Column("execution_time_ms", "execution_time_ms"),
    Column("chars_in", "chars_in"),
    Column("chars_out", "chars_out"),
    Column("cost", "cost"),
    Column("input_hash", "input_hash"),
    Column("cached_from", "cached_from_id"),
    Column("request_id", "request_id"),
    Column("entry_point", "entry_point"),
    Column("client_name", "client_name"),
    Column("client_version", "client_version"),
    Column("protocol_version", "protocol_version"),
    Column("oauth_client_id", "oauth_client_id"),
    Column("oauth_client_name", "oauth_client_name"),
    Column("upstream_connection_id", "upstream_connection_id"),
    Column("trace_id", "trace_id"),
    Column("created_at", "created_at"),
    Column("started_at", "started_at"),
    Column("finished_at", "finished_at"),
]
# Outputs can be large (up to a tool's max_response_bytes each): read fewer rows at a time.
CHUNK_SIZE = 500


def execution_export_response(queryset, fmt: str):
    """Stream ``queryset`` (already filtered and permission-checked) as a file."""
    return export_response(
        queryset.select_related(None),
        columns=EXECUTION_COLUMNS,
        fmt=fmt,
        basename="executions",
        chunk_size=CHUNK_SIZE,
    )


__all__ = ["EXECUTION_COLUMNS", "FORMATS", "execution_export_response"]
