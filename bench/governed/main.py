"""One run of ``governed_vs_direct.py``: start everything, measure, report, clean up."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from governed.analysis import phase_breakdown, verify_rows
from governed.calls import Calls
from governed.environment import Target, bench_env, export_revision, flush_redis, parse_overrides
from governed.load import RunResult, run_load
from governed.options import is_asgi, parse_args
from governed.report import machine, report, results_json, source_label
from governed.stack import (
    PY,
    migrate_and_seed,
    oauth_token,
    run_profile,
    start_celery,
    start_upstream,
    start_web,
    upstream_capacity,
)
from harness import BENCH, ROOT
from harness.cpu import connections_per_worker
from harness.postgres import (
    PgStats,
    connect,
    drop_database,
    recreate_database,
    try_advisory_lock,
)
from harness.processes import (
    Processes,
    ignore_stop_signals,
    interrupt_on_stop_signals,
    wait_until,
)

RUN_LOCK_KEY = 0x7468_6265_6E63_6801  # pg_advisory_lock key: one run at a time


class Run:
    """The state of one run, so that whatever happens, what it started is stopped and dropped."""

    def __init__(self, args, target: Target) -> None:
        self.args = args
        self.target = target
        self.concurrencies = [int(c) for c in args.concurrency.split(",") if c.strip()]
        self.tmp = Path(tempfile.mkdtemp(prefix="toolhub-bench-"))
        # --ref: benchmark a committed revision, an export of it in the temporary directory.
        self.src = export_revision(args.ref, self.tmp) if args.ref else ROOT
        self.launch = [PY, str(BENCH / "_launch.py")] if args.ref else [PY]
        self.procs = Processes(self.tmp, self.src)
        self.env = bench_env(self.tmp, self.src, target, args.db_options, parse_overrides(args.set))
        self.db_created = False
        self.ok = False
        self.pg_stats: PgStats | None = None

    def execute(self) -> int:
        args = self.args
        # 1. Upstream.
        upstream, up_port = start_upstream(self.procs, self.env, args.upstream_procs)
        upstream_url = f"http://127.0.0.1:{up_port}"
        capacity = upstream_capacity(up_port)
        print(
            f"upstream {upstream_url}: {capacity[0]:.0f} req/s pipelined, {capacity[1]:.0f} "
            "req/s one-at-a-time",
            flush=True,
        )
        # 2. Database, migrations, seed.
        recreate_database(self.target.database)
        self.db_created = True
        flush_redis(self.target)
        seed = migrate_and_seed(self.launch, self.env, self.src, upstream_url)
        print(f"seeded tool {seed['tool_id']}", flush=True)
        # 3. Celery worker (and the web server unless profiling).
        celery = start_celery(self.procs, self.launch, self.env, args)
        if args.profile:
            code = run_profile(self.launch, self.env, self.src, seed, args.profile_calls)
            self.ok = code == 0
            return code
        web, port, base = start_web(self.procs, self.launch, self.env, args)
        if args.oauth:
            seed["oauth_token"] = oauth_token(self.launch, self.env, self.src, base + "/mcp")
        groups = {"gunicorn": web.pid, "celery": celery.pid, "upstream": upstream.pid}
        self.pg_stats = PgStats(self.target.database)
        calls = Calls(base, upstream_url, seed)
        # 4. Warm-up, then each mode at each concurrency.
        self._warm_up(calls)
        if args.kill_db_connections:
            self._kill_db_connections()
        results, phases = self._measure(
            calls, groups, lambda: connections_per_worker(port, web.pid)
        )
        # 5. Durability and the report.
        return self._finish(results, phases, capacity)

    def _warm_up(self, calls: Calls) -> None:
        """The worker must be up before anything is timed."""
        warmup = self.args.warmup
        with calls.governed_client() as client:
            wait_until(
                "celery worker (first governed call)",
                lambda: calls.governed(client, 0)[0],
                60,
                self.procs,
            )
            for x in range(warmup):
                ok_, ident, _ = calls.governed(client, x)
                if ok_ and not calls.read_path:
                    calls.read_path.append(f"/api/v1/executions/{ident}")
        with calls.direct_client() as client:
            for x in range(warmup * 5):
                calls.direct(client, x)
        if self.args.mcp:
            with calls.mcp_client() as client:
                for x in range(warmup):
                    calls.mcp(client, x)
        if calls.oauth_headers:
            with calls.mcp_oauth_client() as client:
                for x in range(warmup):
                    calls.mcp(client, x)

    def _kill_db_connections(self) -> None:
        """Every process loses its database connection (as after a PostgreSQL restart or
        failover); the governed calls that follow must still succeed."""
        with connect(autocommit=True) as conn:
            killed = conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.target.database,),
            ).fetchone()[0]
        print(f"terminated {killed} database connection(s) of the bench database", flush=True)

    def _measure(self, calls: Calls, groups: dict[str, int], distribution):
        args = self.args
        results: list[RunResult] = []
        phases: dict[int, dict] = {}
        for c in self.concurrencies:
            for kind, make, call in calls.modes(args.mcp, args.floor):
                print(f"running {kind} c={c} n={args.n} ...", flush=True)
                result = run_load(
                    kind=kind,
                    concurrency=c,
                    n=args.n,
                    ramp=args.ramp if c > 1 else 0,
                    make_client=make,
                    call=call,
                    groups=groups,
                    db_name=self.target.database,
                    pg_stats=self.pg_stats,
                    on_start=distribution if kind == "governed" else None,
                )
                self.procs.check_alive()
                print(
                    f"  {result.rps:.1f} req/s p50 {result.pct(50):.2f} ms "
                    f"p99 {result.pct(99):.2f} ms errors {result.errors}",
                    flush=True,
                )
                results.append(result)
                if kind == "governed":
                    phases[c] = phase_breakdown(result.records, self.target.database)
        return results, phases

    def _finish(self, results: list[RunResult], phases: dict, capacity) -> int:
        """Every measured governed call's row is final and succeeded; print (and write) the report."""
        time.sleep(0.5)
        ids = [
            r[0]
            for res in results
            if res.kind in ("governed", "mcp", "mcp_oauth")
            for r in res.records
        ]
        rows = verify_rows(ids, self.target.database)
        meta = {
            "machine": machine(self.target),
            "source": source_label(self.args.ref),
            "upstream_pipelined": capacity[0],
            "upstream_serial": capacity[1],
            "phases": phases,
            "rows": rows,
        }
        print("\n" + report(results, self.args, meta))
        if self.args.json:
            self.args.json.write_text(json.dumps(results_json(results, self.args, meta), indent=2))
        bad = sum(r.errors for r in results)
        lost = rows["measured_ids"] - rows["measured_succeeded"]
        self.ok = bad == 0 and lost == 0
        return 0 if self.ok else 1

    def clean_up(self) -> None:
        if not self.ok:
            print(self.procs.tails(), file=sys.stderr)
        self.procs.stop_all()
        if self.pg_stats is not None:
            self.pg_stats.close()
        if self.db_created:
            with contextlib.suppress(Exception):
                drop_database(self.target.database)
        with contextlib.suppress(Exception):
            flush_redis(self.target)
        shutil.rmtree(self.tmp, ignore_errors=True)


def preflight(args) -> str | None:
    """What stops the run before it starts (None: nothing); fixes up the server for --mcp."""
    if args.mcp and args.server == "gunicorn" and not is_asgi(args.gunicorn_worker_class):
        args.gunicorn_worker_class = "uvicorn_worker.UvicornWorker"
    if args.server == "granian" and importlib.util.find_spec("granian") is None:
        return (
            "--server granian: Granian is not installed (it is not a ToolHub dependency); "
            "install it with: .venv/bin/pip install granian"
        )
    return None


def main() -> int:
    args = parse_args()
    target = Target(args.database, args.redis_db)
    problem = preflight(args)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    interrupt_on_stop_signals()
    run = Run(args, target)
    # One run at a time on this machine: the database name and Redis db are usually the same, and a
    # second run would drop the first one's database and flush its broker.
    run_lock = try_advisory_lock(RUN_LOCK_KEY)
    if run_lock is None:
        shutil.rmtree(run.tmp, ignore_errors=True)
        print(
            "another governed_vs_direct.py run is in progress on this machine "
            "(PostgreSQL advisory lock held); try again when it has finished",
            file=sys.stderr,
        )
        return 2
    try:
        return run.execute()
    except KeyboardInterrupt:
        print("\ninterrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        ignore_stop_signals()
        run.clean_up()
        run_lock.close()  # releases the advisory lock
