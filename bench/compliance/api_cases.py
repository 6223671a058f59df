"""The API's cursor pages of executions and audit events, with the filters a reviewer uses."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlencode

from compliance.measure import getter, walker
from compliance.samples import Samples

API = "/api/v1/executions"
AUDIT_API = "/api/v1/audit"


def run_execution_api(b, client, reviewer_client, s: Samples) -> None:
    b.run("api", "first page (page_size=50)", getter(client, f"{API}?page_size=50"))
    b.run(
        "api", "first page, reviewer bearer token", getter(reviewer_client, f"{API}?page_size=50")
    )
    b.run(
        "api",
        "100 pages following cursors (page_size=50)",
        walker(client, f"{API}?page_size=50", 100),
        runs=2,
    )
    for label, params in _execution_filters(s).items():
        b.run(
            "api", f"first page {label}", getter(client, f"{API}?page_size=50&{urlencode(params)}")
        )
    for label, pair in (("busy", s.busy), ("quiet", s.quiet)):
        params = {
            "tool_id": str(pair[0]),
            "agent_id": str(pair[1]),
            "page_size": 200,
            "created_after": s.q_start.isoformat(),
            "created_before": s.q_end.isoformat(),
        }
        b.run(
            "api",
            f"ALL calls of tool X by agent Y last quarter ({label}: {pair[2]:,} rows, page_size=200)",
            walker(client, f"{API}?{urlencode(params)}", 100_000),
            runs=0 if pair[2] > 50_000 else 1,
        )


def _execution_filters(s: Samples) -> dict[str, dict]:
    quarter = {"created_after": s.q_start.isoformat(), "created_before": s.q_end.isoformat()}
    return {
        "status=failed": {"status": "failed"},
        "status=expired": {"status": "expired"},
        "tool_id": {"tool_id": str(s.mid["tool_id"])},
        "agent_id": {"agent_id": str(s.mid["agent_id"])},
        "role=analyst": {"role": "analyst"},
        "created_after/before one day 6 months ago": {
            "created_after": (s.now - dt.timedelta(days=180)).isoformat(),
            "created_before": (s.now - dt.timedelta(days=179)).isoformat(),
        },
        "tool X + agent Y + last quarter (busy pair)": {
            "tool_id": str(s.busy[0]),
            "agent_id": str(s.busy[1]),
            **quarter,
        },
        "tool X + agent Y + last quarter (quiet pair)": {
            "tool_id": str(s.quiet[0]),
            "agent_id": str(s.quiet[1]),
            **quarter,
        },
        "status=expired + tool (recent, rare)": {"status": "expired", "tool_id": str(s.rare_tool)},
    }


def has_audit_api() -> bool:
    from registry.api import urls

    return any("audit" == str(p.pattern) for p in urls.urlpatterns)


def run_audit_api(b, client, s: Samples) -> None:
    if not has_audit_api():
        return
    b.run("api audit", "first page", getter(client, f"{AUDIT_API}?page_size=50"))
    b.run(
        "api audit",
        "100 pages following cursors",
        walker(client, f"{AUDIT_API}?page_size=50", 100),
        runs=2,
    )
    filters = {
        "action=execution.expired": {"action": "execution.expired"},
        "action=tool.created": {"action": "tool.created"},
        "action=execution. (prefix)": {"action": "execution."},
        "actor (agent)": {"actor": s.agent_users[s.busy[1]]},
        "target_type+target_id (one execution)": {
            "target_type": "executions.execution",
            "target_id": str(s.mid["id"]),
        },
        "target_id only": {"target_id": str(s.mid["id"])},
        "request_id": {"request_id": s.ev["request_id"]},
        "occurred_after/before one day 6 months ago": {
            "occurred_after": (s.now - dt.timedelta(days=180)).isoformat(),
            "occurred_before": (s.now - dt.timedelta(days=179)).isoformat(),
        },
    }
    for label, params in filters.items():
        url = f"{AUDIT_API}?page_size=50&{urlencode(params)}"
        b.run("api audit", f"first page {label}", getter(client, url))
