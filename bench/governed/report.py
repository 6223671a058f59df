"""The Markdown report of a run (and its JSON form), and where it ran."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from governed.environment import Target, redis_version
from governed.load import RunResult
from harness import ROOT
from harness.cpu import COMPONENTS
from harness.machine import cpu_model, git, mem_total_kib
from harness.postgres import server_version


def fmt(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def report(results: list[RunResult], args, meta: dict) -> str:
    lines = _header(args, meta)
    lines += _latency_table(results)
    lines += _comparisons(results)
    lines += _cpu_table(results)
    lines += _postgres_table(results)
    lines += _phase_tables(results, meta["phases"])
    lines += _durability(results, meta["rows"])
    return "\n".join(lines)


def _server(args) -> str:
    if args.server == "granian":
        return f"ToolHub: granian {args.gunicorn_workers} x wsgi ({args.gunicorn_threads} threads)"
    threads = (
        f" ({args.gunicorn_threads} threads)" if args.gunicorn_worker_class == "gthread" else ""
    )
    return f"ToolHub: gunicorn {args.gunicorn_workers} x {args.gunicorn_worker_class}{threads}"


def _header(args, meta: dict) -> list[str]:
    return [
        f"Machine: {meta['machine']}",
        f"Code: {meta['source']}",
        _server(args)
        + f", Celery {args.celery_pool} -c {args.celery_concurrency}"
        + (f", DATABASE_URL options {args.db_options}" if args.db_options else "")
        + (f", settings overrides {' '.join(args.set)}" if args.set else "")
        + f"; N={args.n} per cell;"
        f" upstream: {args.upstream_procs} asyncio process(es),"
        f" {meta['upstream_pipelined']:.0f} req/s pipelined, {meta['upstream_serial']:.0f} req/s"
        " one-at-a-time on one raw socket",
        "",
    ]


def _latency_table(results: list[RunResult]) -> list[str]:
    lines = [
        "| mode | concurrency | requests/s | p50 ms | p99 ms | errors |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.kind} | {r.concurrency} | {fmt(r.rps, 1)} | {fmt(r.pct(50))} | "
            f"{fmt(r.pct(99))} | {r.errors} |"
        )
    return [*lines, ""]


def _comparisons(results: list[RunResult]) -> list[str]:
    lines = []
    by = {(r.kind, r.concurrency): r for r in results}
    for c in sorted({r.concurrency for r in results}):
        g, d, m = by.get(("governed", c)), by.get(("direct", c)), by.get(("mcp", c))
        if g and d:
            lines.append(
                f"- c={c}: governed p50 - direct p50 = {fmt(g.pct(50) - d.pct(50))} ms; "
                f"governed p99 - direct p99 = {fmt(g.pct(99) - d.pct(99))} ms; "
                f"governed rps / direct rps = {g.rps / d.rps:.4f} ({d.rps / g.rps:.1f}x fewer)"
            )
        if m and d and g:
            lines.append(
                f"- c={c}: MCP tools/call p50 - direct p50 = {fmt(m.pct(50) - d.pct(50))} ms; "
                f"MCP p50 - REST p50 = {fmt(m.pct(50) - g.pct(50))} ms; "
                f"MCP rps / direct rps = {m.rps / d.rps:.4f}; MCP rps / REST rps = "
                f"{m.rps / g.rps:.2f}"
            )
        o = by.get(("mcp_oauth", c))
        if o and m:
            lines.append(
                f"- c={c}: MCP with an OAuth token (for a person) p50 - with the agent's static "
                f"token p50 = {fmt(o.pct(50) - m.pct(50))} ms; rps OAuth / static = "
                f"{o.rps / m.rps:.2f}"
            )
        for kind, what in (
            ("noop", "GET /healthz (Django, no database)"),
            ("read", "GET one execution (DRF, token auth, one row)"),
        ):
            f = by.get((kind, c))
            if f and d:
                lines.append(
                    f"- c={c}: {what}: p50 - direct p50 = {fmt(f.pct(50) - d.pct(50))} ms; "
                    f"rps / direct rps = {f.rps / d.rps:.4f}"
                )
    return lines


def _cpu_table(results: list[RunResult]) -> list[str]:
    lines = [
        "",
        "CPU ms per call, by component, during the measured calls (`other` = the rest of the"
        " machine; `cores busy` = all of it, out of "
        f"{os.cpu_count()}):",
        "",
        "| mode | c | " + " | ".join(COMPONENTS) + " | ours | cores busy |",
        "|---|---:|" + "---:|" * (len(COMPONENTS) + 2),
    ]
    for r in results:
        calls = max(1, len(r.latencies))
        per = [r.cpu.get(k, 0.0) * 1000 / calls for k in COMPONENTS]
        ours = sum(per) - per[COMPONENTS.index("other")]
        busy = sum(r.cpu.get(k, 0.0) for k in COMPONENTS)
        lines.append(
            f"| {r.kind} | {r.concurrency} | "
            + " | ".join(fmt(x) for x in per)
            + f" | {fmt(ours)} | {busy / r.elapsed:.2f} |"
        )
    return lines


def _postgres_table(results: list[RunResult]) -> list[str]:
    lines = [
        "",
        "PostgreSQL work per governed call (pg_stat_database of the bench database):",
        "",
        "| c | sessions opened | transactions (an autocommit statement is one) | rows inserted"
        " | rows updated |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r.kind == "governed" and r.pg:
            calls = max(1, len(r.latencies))
            lines.append(
                f"| {r.concurrency} | {r.pg['sessions'] / calls:.2f} | "
                f"{r.pg['xact_commit'] / calls:.2f} | {r.pg['tup_inserted'] / calls:.2f} | "
                f"{r.pg['tup_updated'] / calls:.2f} |"
            )
    return lines


def _phase_tables(results: list[RunResult], all_phases: dict) -> list[str]:
    lines = []
    for r in results:
        phases = all_phases.get(r.concurrency, {}) if r.kind == "governed" else {}
        if not phases:
            continue
        lines += [
            "",
            f"Governed latency by phase, c={r.concurrency} (from the Execution rows' timestamps;"
            f" client p50 {fmt(r.pct(50))} ms):",
            "",
            "| phase | p50 ms | p99 ms |",
            "|---|---:|---:|",
        ]
        for name, (p50, p99) in phases.items():
            lines.append(f"| {name} | {fmt(p50)} | {fmt(p99)} |")
        if r.worker_connections:
            lines.append("")
            lines.append(f"Client connections per gunicorn worker: {r.worker_connections}")
    return lines


def _durability(results: list[RunResult], rows: dict) -> list[str]:
    lines = [
        "",
        f"Durability: {rows['measured_succeeded']}/{rows['measured_ids']} measured governed calls"
        f" have their Execution row 'succeeded'; all rows by status: "
        + ", ".join(f"{k[5:]}={v}" for k, v in rows.items() if k.startswith("rows_"))
        + f"; audit events: {rows['audit_events']}",
    ]
    for r in results:
        if r.error_samples:
            lines.append(f"Errors ({r.kind}, c={r.concurrency}): {r.error_samples}")
    return lines


def results_json(results: list[RunResult], args, meta: dict) -> dict:
    """What ``--json FILE`` writes: the run's facts, its options and every cell."""
    return {
        "meta": meta | {"phases": {str(k): v for k, v in meta["phases"].items()}},
        "args": {k: str(v) for k, v in vars(args).items()},
        "results": [
            {
                "kind": r.kind,
                "concurrency": r.concurrency,
                "n": r.n,
                "rps": r.rps,
                "p50_ms": r.pct(50),
                "p99_ms": r.pct(99),
                "errors": r.errors,
                "cpu_seconds": r.cpu,
                "pg_stat_database": r.pg,
                "worker_connections": r.worker_connections,
            }
            for r in results
        ],
    }


def source_label(ref: str | None) -> str:
    if ref:
        sha = git("rev-parse", "--short", ref)
        return f"git {sha}" if sha.startswith(ref) else f"git {ref} = {sha}"
    dirty = ""
    diff = subprocess.run(
        ["git", "-C", str(ROOT), "diff", "HEAD"], capture_output=True, check=False
    ).stdout
    untracked = [
        line
        for line in git("status", "--porcelain").splitlines()
        if line.startswith("??") and not line[3:].startswith("bench/")
    ]
    if diff or untracked:
        dirty = (
            f" + uncommitted changes (git diff HEAD sha256 {hashlib.sha256(diff).hexdigest()[:10]},"
            f" {len(untracked)} untracked paths)"
        )
    return f"working tree at {git('rev-parse', '--short', 'HEAD')}{dirty}"


def machine(target: Target) -> str:
    kib = mem_total_kib()
    mem = f", {kib / 1024 / 1024:.0f} GiB RAM" if kib else ""
    return (
        f"{os.cpu_count()} CPU cores ({cpu_model()}){mem}; Python {sys.version.split()[0]}; "
        f"PostgreSQL {server_version()}, Redis {redis_version(target)} on the same machine"
    )
