"""What the Execution rows of the measured calls say: latency by phase, and that none was lost."""

from __future__ import annotations

import statistics

from governed.load import percentile
from harness.postgres import connect

PHASES = [
    "client → row queued (HTTP, auth, access, validation)",
    "queued → worker started (INSERT+audit+COMMIT, Celery hop)",
    "worker started → finished (claim, configs, executor)",
    "  of which executor loop (execution_time_ms)",
    "finished → client has answer (final UPDATE+audit, wake-up, re-read, JSON)",
]


def phase_breakdown(
    records: list[tuple[str, float, float]], db_name: str
) -> dict[str, tuple[float, float]]:
    """Median and p99 (ms) of each phase of the governed calls, from the Execution rows."""
    if not records:
        return {}
    by_id = {ident: (sent, latency) for ident, sent, latency in records}
    with connect(db_name) as conn:
        rows = conn.execute(
            "SELECT id::text, extract(epoch from queued_at), extract(epoch from started_at), "
            "extract(epoch from finished_at), execution_time_ms "
            "FROM executions_execution WHERE id = ANY(%s::uuid[])",
            (list(by_id),),
        ).fetchall()
    phases: dict[str, list[float]] = {name: [] for name in PHASES}
    for ident, queued, started, finished, exec_ms in rows:
        sent, latency = by_id[ident]
        queued, started, finished = float(queued), float(started), float(finished)
        phases[PHASES[0]].append((queued - sent) * 1000)
        phases[PHASES[1]].append((started - queued) * 1000)
        phases[PHASES[2]].append((finished - started) * 1000)
        phases[PHASES[3]].append(float(exec_ms or 0))
        phases[PHASES[4]].append((sent + latency - finished) * 1000)
    return {
        name: (statistics.median(values), percentile(values, 99))
        for name, values in phases.items()
        if values
    }


def verify_rows(ids: list[str], db_name: str) -> dict[str, int]:
    with connect(db_name) as conn:
        succeeded = conn.execute(
            "SELECT count(*) FROM executions_execution WHERE id = ANY(%s::uuid[]) "
            "AND status = 'succeeded'",
            (ids,),
        ).fetchone()[0]
        by_status = dict(
            conn.execute(
                "SELECT status, count(*) FROM executions_execution GROUP BY status"
            ).fetchall()
        )
        audit = conn.execute("SELECT count(*) FROM registry_auditevent").fetchone()[0]
    return {
        "measured_ids": len(set(ids)),
        "measured_succeeded": succeeded,
        "audit_events": audit,
        **{f"rows_{k}": v for k, v in by_status.items()},
    }
