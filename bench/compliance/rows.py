# ruff: noqa: UP031  (percent formatting of row templates: fast and readable)
"""The rows the generator writes: their columns, the values they draw from, COPY text helpers."""

from __future__ import annotations

import datetime as dt

from compliance.environment import EPOCH

N = "\\N"  # NULL in COPY text


def iso(us: int) -> str:
    return (EPOCH + dt.timedelta(microseconds=us)).isoformat(timespec="microseconds")


def rand_uuid(getrandbits) -> str:
    h = "%032x" % getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


INPUT_TEMPLATES = {
    "http": '{"account_id":"ACC-%d","limit":%d}',
    "database": '{"customer_id":%d,"max_rows":%d}',
    "mcp": '{"query":"order %d","top_k":%d}',
    "python": '{"document_id":"doc-%d","sentences":%d}',
}
ERRORS = [  # (error_type, weight, message, upstream status)
    ("upstream_error", 40, "Upstream answered HTTP 502 Bad Gateway", 502),
    ("timeout", 25, "The tool did not answer within 30 s", None),
    ("connection_error", 15, "Connection refused by upstream", None),
    ("tool_error", 14, "ValueError: unknown account", None),
    ("worker_lost", 3, "The worker running this call stopped", None),
    ("egress_denied", 2, "Destination 10.0.0.5 is not allowed", None),
    ("read_only_violation", 1, "A write was attempted on a read-only database", None),
]
DENIALS = [
    ("permission_denied", 50, "You may not execute this tool."),
    ("rate_limited", 42, "Rate limit of 100 calls per 60 s reached."),
    ("tool_not_found", 5, "Tool not found."),
    ("tool_inactive", 3, "This tool is deactivated."),
]
EXEC_COLUMNS = [
    "id",
    "tool_id",
    "tool_name",
    "tool_version",
    "tool_type",
    "requested_tool",
    "agent_id",
    "principal_id",
    "principal_name",
    "role_id",
    "roles_used",
    "status",
    "reason_code",
    "input_data",
    "raw_input",
    "input_hash",
    "sealed_secrets",
    "output_data",
    "output_truncated",
    "output_size",
    "output_artifact",
    "error_type",
    "error_message",
    "upstream_status",
    "attempts",
    "created_at",
    "queued_at",
    "started_at",
    "finished_at",
    "deadline_at",
    "execution_time_ms",
    "chars_in",
    "chars_out",
    "cost",
    "cached_from_id",
    "heartbeat_at",
    "request_id",
    "client_address",
    "worker",
]
AUDIT_COLUMNS = [
    "id",
    "occurred_at",
    "actor_id",
    "actor_name",
    "action",
    "target_type",
    "target_id",
    "target_repr",
    "before",
    "after",
    "request_id",
    "client_address",
    "sequence",
    "prev_hash",
    "hash",
    "sealed_at",
]
APPROVAL_COLUMNS = [
    "id",
    "execution_id",
    "input_hash",
    "status",
    "requested_at",
    "expires_at",
    "decided_by_id",
    "decided_by_name",
    "decided_at",
    "reason",
]


def weighted(rng, items, weight_index=1):
    total = sum(item[weight_index] for item in items)
    cum, acc = [], 0
    for item in items:
        acc += item[weight_index]
        cum.append(acc / total)

    def pick():
        r = rng.random()
        for item, edge in zip(items, cum, strict=True):
            if r <= edge:
                return item
        return items[-1]

    return pick
