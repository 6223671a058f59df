"""The results file (merged with the previous one for ``--only``) and the Markdown table."""

from __future__ import annotations

import datetime as dt
import json
import os

from compliance.environment import DB_NAME, RESULTS_PATH, machine_info
from compliance.samples import Samples
from harness.machine import git


def results_of(b, s: Samples, verify: dict, context: dict, admins) -> dict:
    from django.conf import settings

    stat = git("diff", "HEAD", "--stat")
    exec_admin, audit_admin = admins
    names = s.tool_names, s.agent_names
    return {
        "machine": machine_info(),
        "code": {
            "head": git("rev-parse", "--short", "HEAD"),
            "uncommitted": stat.splitlines()[-1:],
        },
        "fill": context["fill"],
        "migrations_applied_before_measuring": context["migrations"],
        "load_average": {"before": context["load_before"], "after": os.getloadavg()},
        "measured_at": dt.datetime.now(dt.UTC).isoformat(),
        "samples": {
            "busy_pair": [names[0][s.busy[0]], names[1][s.busy[1]], s.busy[2]],
            "quiet_pair": [names[0][s.quiet[0]], names[1][s.quiet[1]], s.quiet[2]],
            "last_quarter": [s.q_start.isoformat(), s.q_end.isoformat()],
        },
        "admin_filters": {
            "executions": [getattr(f, "__name__", f) for f in exec_admin.list_filter],
            "audit": [getattr(f, "__name__", f) for f in audit_admin.list_filter],
        },
        "rows": b.rows,
        "verify": verify,
        "explain": b.explained,
        "settings_debug": settings.DEBUG,
    }


def write_results(results: dict, only: str | None) -> None:
    """Write the results; with ``--only``, the previous file's other cases are kept."""
    if only and RESULTS_PATH.exists():
        previous = json.loads(RESULTS_PATH.read_text())
        new = {(x["group"], x["case"]) for x in results["rows"]}
        results["rows"] = [
            r for r in previous.get("rows", []) if (r["group"], r["case"]) not in new
        ] + results["rows"]
        results["explain"] = {**previous.get("explain", {}), **results["explain"]}
        results["verify"] = results["verify"] or previous.get("verify", {})
    RESULTS_PATH.write_text(json.dumps(results, indent=1, default=str))


def print_table(results) -> None:
    print("\n| group | case | first ms | median ms | queries | slowest query ms | note |")
    print("|---|---|---:|---:|---:|---:|---|")
    for r in results["rows"]:
        note = r.get("error") or r.get("note", "")
        print(
            f"| {r['group']} | {r['case']} | {r['first_ms']:.0f} | {r['median_ms']:.0f} | {r['queries']} | "
            f"{r['slowest_ms'] if r['slowest_ms'] is not None else ''} | {note} |"
        )
    print(f"\nresults: {RESULTS_PATH}")
    print(
        f"drop the database: psql -h 127.0.0.1 -U postgres -c 'DROP DATABASE {DB_NAME} WITH (FORCE)'"
    )
