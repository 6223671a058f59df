"""Governed calls through ToolHub vs direct calls to the same upstream, in one run.

    .venv/bin/python bench/governed_vs_direct.py [--n 2000] [--concurrency 1,16]
    .venv/bin/python bench/governed_vs_direct.py --profile      # in-process profile instead

What it does (see bench/README.md for the results and how to read them):

1. starts a fast HTTP/1.1 upstream on 127.0.0.1 (bench/upstream.py) and checks its capacity;
2. creates the PostgreSQL database ``toolhub_bench`` (dropped first), migrates it with a
   production-like environment (DEBUG off, generated SECRET_KEY and Fernet key, Redis db 9
   as cache and broker) and seeds an agent allowed to ``execute`` one ``http`` tool;
3. starts ToolHub under gunicorn (2 workers, gthread by default) and a Celery worker;
4. for each concurrency: N direct calls (httpx) and N governed calls
   (``POST /api/v1/executions`` with ``wait: true``), each checked, with requests/s,
   p50, p99, CPU per call of every component, and a per-phase breakdown of the governed
   latency from the Execution rows' timestamps;
5. checks that every governed call's Execution row is ``succeeded`` in the database;
6. stops everything it started and drops the database (also on Ctrl-C and errors).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import math
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import redis
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PY = sys.executable
DB_NAME = "toolhub_bench"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
REDIS_URL = "redis://127.0.0.1:6379/9"
RUN_LOCK_KEY = 0x7468_6265_6E63_6801  # pg_advisory_lock key: one run at a time
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- processes


class Processes:
    """Every process this script starts, each in its own session so its children stop with it."""

    def __init__(self, log_dir: Path, cwd: Path) -> None:
        self.log_dir = log_dir
        self.cwd = cwd
        self.started: list[tuple[str, subprocess.Popen, object]] = []

    def start(self, name: str, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "wb")  # closed in stop_all
        proc = subprocess.Popen(
            cmd, cwd=self.cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.started.append((name, proc, log))
        return proc

    def check_alive(self) -> None:
        for name, proc, _log in self.started:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with code {proc.returncode}")

    def stop(self, proc: subprocess.Popen, grace: float = 15.0) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        # Children that outlived their leader are still in its process group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def stop_all(self) -> None:
        for _name, proc, log in reversed(self.started):
            self.stop(proc)
            log.close()
        self.started.clear()

    def tails(self, lines: int = 25) -> str:
        out = []
        for name, _proc, _log in self.started:
            path = self.log_dir / f"{name}.log"
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name}.log (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(out)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


MCP_INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"},
}


def mcp_message(rpc_id: int, method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(what: str, check: Callable[[], bool], timeout: float, procs: Processes) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs.check_alive()
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s")


def run_checked(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> str:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result.stdout


# --------------------------------------------------------------------------- environment


def bench_env(
    tmp: Path, src: Path, db_options: str = "", overrides: dict | None = None
) -> dict[str, str]:
    """A production-like environment (DEBUG off) pointing at the bench database and Redis db 9."""
    drop = (
        "DJANGO_",
        "CELERY_",
        "TOOLHUB_",
        "SECURE_",
        "DATABASE_URL",
        "REDIS_URL",
        "DEBUG",
        "PYTHONPATH",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        PYTHONPATH=str(src),
        TOOLHUB_BENCH_SRC=str(src),
        DJANGO_SETTINGS_MODULE="toolhub.settings",
        DATABASE_URL=DATABASE_URL + (f"?{db_options}" if db_options else ""),
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        TOOLHUB_ENCRYPTION_KEYS=Fernet.generate_key().decode(),
        TOOLHUB_AUDIT_SIGNING_KEY=secrets.token_urlsafe(32),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        REDIS_URL=REDIS_URL,
        CELERY_BROKER_URL=REDIS_URL,
        TOOLHUB_EGRESS_ALLOW="127.0.0.1/32",
        SECURE_SSL_REDIRECT="false",
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
        TOOLHUB_VAR_DIR=str(tmp / "var"),
        MEDIA_ROOT=str(tmp / "media"),
        PYTHONUNBUFFERED="1",
    )
    if overrides:
        env.update(
            DJANGO_SETTINGS_MODULE="bench_settings",
            PYTHONPATH=f"{src}{os.pathsep}{BENCH}",
            TOOLHUB_BENCH_OVERRIDES=json.dumps(overrides),
        )
    return env


def parse_overrides(items: list[str]) -> dict:
    overrides = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"--set needs NAME=VALUE, got {item!r}")
        try:
            overrides[name] = json.loads(raw)
        except ValueError:
            overrides[name] = raw
    return overrides


def create_database() -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def drop_database() -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def flush_redis() -> None:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.flushdb()
    finally:
        client.close()


# --------------------------------------------------------------------------- CPU accounting


def _proc_stats() -> list[tuple[int, str, int, int, float, float]]:
    """(pid, comm, pgrp, ppid, cpu seconds, cpu seconds of reaped children) of every process."""
    rows = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                raw = handle.read()
        except OSError:
            continue
        comm = raw[raw.find("(") + 1 : raw.rfind(")")]
        fields = raw[raw.rfind(")") + 2 :].split()
        rows.append(
            (
                int(entry),
                comm,
                int(fields[2]),
                int(fields[1]),
                (int(fields[11]) + int(fields[12])) / CLK_TCK,
                (int(fields[13]) + int(fields[14])) / CLK_TCK,
            )
        )
    return rows


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _system_busy() -> float:
    """CPU seconds all cores spent busy since boot (every process, dead or alive)."""
    with open("/proc/stat") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / CLK_TCK


COMPONENTS = ["gunicorn", "celery", "postgres", "pg exited", "redis", "upstream", "client", "other"]


def cpu_snapshot(groups: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far by each component.

    Our process groups include their exited children (reaped by the group leader).
    ``postgres`` is the bench database's live backends and the server's own
    processes; ``pg exited`` is every backend that exited meanwhile (the
    postmaster reaps them: a connection opened per task shows here, but so do
    other databases' short sessions). ``other`` is everything else on the machine.
    """
    by_group = {pgid: name for name, pgid in groups.items()}
    totals = dict.fromkeys(COMPONENTS, 0.0)
    rows = _proc_stats()
    postgres_pids = {pid for pid, comm, *_ in rows if comm.startswith("postgres")}
    for pid, comm, pgrp, ppid, seconds, children in rows:
        if pgrp in by_group:
            totals[by_group[pgrp]] += seconds + (children if pid == pgrp else 0.0)
        elif pid in postgres_pids:
            if ppid not in postgres_pids:  # the postmaster
                totals["postgres"] += seconds
                totals["pg exited"] += children
                continue
            line = _cmdline(pid)
            is_backend = "(" in line or "[local]" in line
            if not is_backend or f" {DB_NAME} " in line:
                totals["postgres"] += seconds
        elif comm.startswith("redis-server"):
            totals["redis"] += seconds
    times = os.times()
    totals["client"] = times.user + times.system
    totals["other"] = _system_busy() - sum(totals.values())
    return totals


PG_STAT_FIELDS = ("sessions", "xact_commit", "xact_rollback", "tup_inserted", "tup_updated")


class PgStats:
    """Counters of the bench database from pg_stat_database (one connection, kept open)."""

    def __init__(self) -> None:
        self.conn = psycopg.connect(PG_ADMIN_URL, autocommit=True)

    def snapshot(self) -> dict[str, float]:
        row = self.conn.execute(
            f"SELECT {', '.join(PG_STAT_FIELDS)} FROM pg_stat_database WHERE datname = %s",
            (DB_NAME,),
        ).fetchone()
        return dict(zip(PG_STAT_FIELDS, (float(v or 0) for v in row), strict=True))

    def close(self) -> None:
        self.conn.close()


def connections_per_worker(port: int, master_pid: int) -> list[int]:
    """Established client connections held by each gunicorn worker (from /proc/net/tcp)."""
    inodes = set()
    with open("/proc/net/tcp") as handle:
        next(handle)
        for line in handle:
            parts = line.split()
            local_port = int(parts[1].split(":")[1], 16)
            if local_port == port and parts[3] == "01":
                inodes.add(parts[9])
    counts = []
    for pid, _comm, pgrp, _ppid, _cpu, _children in _proc_stats():
        if pgrp != master_pid or pid == master_pid:
            continue
        held = 0
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        held += 1
        counts.append(held)
    return sorted(counts, reverse=True)


# --------------------------------------------------------------------------- load


@dataclass
class RunResult:
    kind: str
    concurrency: int
    n: int
    elapsed: float
    latencies: list[float]
    errors: int
    error_samples: list[str]
    # (execution id, wall-clock send time, latency) of each successful governed call
    records: list[tuple[str, float, float]] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    worker_connections: list[int] = field(default_factory=list)
    pg: dict[str, float] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0

    def pct(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    if q == 50:
        return statistics.median(ordered)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(len(ordered) * q / 100) - 1))]


def run_load(
    *,
    kind: str,
    concurrency: int,
    n: int,
    ramp: float,
    make_client: Callable[[], httpx.Client],
    call: Callable[[httpx.Client, int], tuple[bool, str, str]],
    groups: dict[str, int],
    pg_stats: PgStats | None = None,
    on_start: Callable[[], list[int]] | None = None,
) -> RunResult:
    """``n`` calls over ``concurrency`` threads, each with its own keep-alive client.

    The threads open their connection one after the other over ``ramp`` seconds (one
    un-timed call each), wait for each other, then all make their calls at once.
    """
    shares = [n // concurrency + (1 if i < n % concurrency else 0) for i in range(concurrency)]
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    records: list[list[tuple[str, float, float]]] = [[] for _ in range(concurrency)]
    errors = [0] * concurrency
    samples: list[str] = []
    ends = [0.0] * concurrency
    barrier = threading.Barrier(concurrency + 1)
    failures: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            if concurrency > 1:
                time.sleep(index * ramp / concurrency)
            with make_client() as client:
                call(client, 900_000_000 + index)  # opens the connection; not timed
                barrier.wait()
                base = index * 1_000_000
                for k in range(shares[index]):
                    sent = time.time()
                    started = time.perf_counter()
                    try:
                        ok, ident, problem = call(client, base + k)
                    except httpx.HTTPError as exc:
                        ok, ident, problem = False, "", f"{type(exc).__name__}: {exc}"
                    elapsed = time.perf_counter() - started
                    latencies[index].append(elapsed)
                    if ok:
                        if ident:
                            records[index].append((ident, sent, elapsed))
                    else:
                        errors[index] += 1
                        if len(samples) < 5:
                            samples.append(problem[:300])
                ends[index] = time.perf_counter()
        except BaseException as exc:
            failures.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    # Every thread has its connection open and waits: count connections and CPU, then go.
    while barrier.n_waiting < concurrency and not barrier.broken:
        time.sleep(0.005)
    distribution = on_start() if on_start and not barrier.broken else []
    pg_before = pg_stats.snapshot() if pg_stats else {}
    cpu_before = cpu_snapshot(groups)
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        for thread in threads:
            thread.join()
        raise RuntimeError(f"{kind} load failed: {failures[:1]!r}") from None
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    cpu_after = cpu_snapshot(groups)
    if failures:
        raise RuntimeError(f"{kind} load failed: {failures[0]!r}")
    pg_delta = {}
    if pg_stats:
        time.sleep(1.5)  # backends report their counters when idle, at most once a second
        pg_after = pg_stats.snapshot()
        pg_delta = {k: pg_after[k] - pg_before[k] for k in pg_after}
    return RunResult(
        kind=kind,
        concurrency=concurrency,
        n=n,
        elapsed=max(ends) - start,
        latencies=[x for part in latencies for x in part],
        errors=sum(errors),
        error_samples=samples,
        records=[r for part in records for r in part],
        cpu={k: cpu_after[k] - cpu_before[k] for k in cpu_after},
        worker_connections=distribution,
        pg=pg_delta,
    )


def upstream_capacity(port: int, total: int = 20000, batch: int = 100) -> tuple[float, float]:
    """(pipelined, one-at-a-time) requests/s of the upstream on one raw keep-alive socket."""
    request = b"GET /ping?x=7 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(request)
        size = len(sock.recv(4096))
        started = time.perf_counter()
        for _ in range(total // batch):
            sock.sendall(request * batch)
            got = 0
            while got < size * batch:
                got += len(sock.recv(1 << 20))
        pipelined = total / (time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(total // 4):
            sock.sendall(request)
            got = 0
            while got < size:
                got += len(sock.recv(4096))
        serial = (total // 4) / (time.perf_counter() - started)
    return pipelined, serial


# --------------------------------------------------------------------------- analysis


def phase_breakdown(records: list[tuple[str, float, float]]) -> dict[str, tuple[float, float]]:
    """Median and p99 (ms) of each phase of the governed calls, from the Execution rows."""
    if not records:
        return {}
    by_id = {ident: (sent, latency) for ident, sent, latency in records}
    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://")) as conn:
        rows = conn.execute(
            "SELECT id::text, extract(epoch from queued_at), extract(epoch from started_at), "
            "extract(epoch from finished_at), execution_time_ms "
            "FROM executions_execution WHERE id = ANY(%s::uuid[])",
            (list(by_id),),
        ).fetchall()
    phases: dict[str, list[float]] = {
        "client → row queued (HTTP, auth, access, validation)": [],
        "queued → worker started (INSERT+audit+COMMIT, Celery hop)": [],
        "worker started → finished (claim, configs, executor)": [],
        "  of which executor loop (execution_time_ms)": [],
        "finished → client has answer (final UPDATE+audit, wake-up, re-read, JSON)": [],
    }
    names = list(phases)
    for ident, queued, started, finished, exec_ms in rows:
        sent, latency = by_id[ident]
        queued, started, finished = float(queued), float(started), float(finished)
        phases[names[0]].append((queued - sent) * 1000)
        phases[names[1]].append((started - queued) * 1000)
        phases[names[2]].append((finished - started) * 1000)
        phases[names[3]].append(float(exec_ms or 0))
        phases[names[4]].append((sent + latency - finished) * 1000)
    return {
        name: (statistics.median(values), percentile(values, 99))
        for name, values in phases.items()
        if values
    }


def verify_rows(ids: list[str]) -> dict[str, int]:
    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://")) as conn:
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


# --------------------------------------------------------------------------- report


def fmt(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def report(results: list[RunResult], args, meta: dict) -> str:
    lines = [
        f"Machine: {meta['machine']}",
        f"Code: {meta['source']}",
        (
            f"ToolHub: granian {args.gunicorn_workers} x wsgi ({args.gunicorn_threads} threads)"
            if args.server == "granian"
            else f"ToolHub: gunicorn {args.gunicorn_workers} x {args.gunicorn_worker_class}"
            + (
                f" ({args.gunicorn_threads} threads)"
                if args.gunicorn_worker_class == "gthread"
                else ""
            )
        )
        + f", Celery {args.celery_pool} -c {args.celery_concurrency}"
        + (f", DATABASE_URL options {args.db_options}" if args.db_options else "")
        + (f", settings overrides {' '.join(args.set)}" if args.set else "")
        + f"; N={args.n} per cell;"
        f" upstream: {args.upstream_procs} asyncio process(es),"
        f" {meta['upstream_pipelined']:.0f} req/s pipelined, {meta['upstream_serial']:.0f} req/s"
        " one-at-a-time on one raw socket",
        "",
        "| mode | concurrency | requests/s | p50 ms | p99 ms | errors |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.kind} | {r.concurrency} | {fmt(r.rps, 1)} | {fmt(r.pct(50))} | "
            f"{fmt(r.pct(99))} | {r.errors} |"
        )
    lines.append("")
    by = {(r.kind, r.concurrency): r for r in results}
    for c in sorted({r.concurrency for r in results}):
        g, d = by.get(("governed", c)), by.get(("direct", c))
        if g and d:
            lines.append(
                f"- c={c}: governed p50 - direct p50 = {fmt(g.pct(50) - d.pct(50))} ms; "
                f"governed p99 - direct p99 = {fmt(g.pct(99) - d.pct(99))} ms; "
                f"governed rps / direct rps = {g.rps / d.rps:.4f} ({d.rps / g.rps:.1f}x fewer)"
            )
        m = by.get(("mcp", c))
        if m and d and g:
            lines.append(
                f"- c={c}: MCP tools/call p50 - direct p50 = {fmt(m.pct(50) - d.pct(50))} ms; "
                f"MCP p50 - REST p50 = {fmt(m.pct(50) - g.pct(50))} ms; "
                f"MCP rps / direct rps = {m.rps / d.rps:.4f}; MCP rps / REST rps = "
                f"{m.rps / g.rps:.2f}"
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
    lines += [
        "",
        "CPU ms per call, by component, during the measured calls (`other` = the rest of the"
        " machine; `cores busy` = all of it, out of "
        f"{os.cpu_count()}):",
        "",
    ]
    lines.append("| mode | c | " + " | ".join(COMPONENTS) + " | ours | cores busy |")
    lines.append("|---|---:|" + "---:|" * (len(COMPONENTS) + 2))
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
    lines += [
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
    for r in results:
        if r.kind != "governed":
            continue
        phases = meta["phases"].get(r.concurrency, {})
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
    rows = meta["rows"]
    lines += [
        "",
        f"Durability: {rows['measured_succeeded']}/{rows['measured_ids']} measured governed calls"
        f" have their Execution row 'succeeded'; all rows by status: "
        + ", ".join(f"{k[5:]}={v}" for k, v in rows.items() if k.startswith("rows_"))
        + f"; audit events: {rows['audit_events']}",
    ]
    for r in results:
        if r.error_samples:
            lines.append(f"Errors ({r.kind}, c={r.concurrency}): {r.error_samples}")
    return "\n".join(lines)


def source_label(ref: str | None) -> str:
    def git(*cmd: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), *cmd], capture_output=True, text=True, check=False
        ).stdout.strip()

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


def machine() -> str:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(OSError), open("/proc/meminfo") as handle:
        kb = int(handle.readline().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    with psycopg.connect(PG_ADMIN_URL) as conn:
        pg = conn.execute("SHOW server_version").fetchone()[0]
    client = redis.Redis.from_url(REDIS_URL)
    try:
        rv = client.info("server")["redis_version"]
    finally:
        client.close()
    return (
        f"{os.cpu_count()} CPU cores ({model}){mem}; Python {sys.version.split()[0]}; "
        f"PostgreSQL {pg}, Redis {rv} on the same machine"
    )


# --------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Governed calls through ToolHub vs direct calls, in one run."
    )
    parser.add_argument("--n", type=int, default=2000, help="calls per mode and concurrency")
    parser.add_argument("--concurrency", default="1,16", help="comma-separated, e.g. 1,16")
    parser.add_argument("--ramp", type=float, default=3.0, help="seconds to open the connections")
    parser.add_argument("--warmup", type=int, default=100, help="un-timed calls of each kind")
    parser.add_argument("--gunicorn-workers", type=int, default=2)
    parser.add_argument("--gunicorn-worker-class", default="gthread")
    # As docker-compose.yml and the Dockerfile run it. On 2 cores 8 threads per
    # worker measured 15-20 % fewer governed calls per second than 4 (GIL
    # contention; bench/README.md), so 4 is the production shape measured.
    parser.add_argument("--gunicorn-threads", type=int, default=4)
    parser.add_argument(
        "--server",
        choices=("gunicorn", "granian"),
        default="gunicorn",
        help="the WSGI server in front of ToolHub (both with --gunicorn-workers processes and "
        "--gunicorn-threads threads each)",
    )
    parser.add_argument("--celery-pool", default="prefork", help="prefork, threads, solo")
    parser.add_argument("--celery-concurrency", type=int, default=2)
    parser.add_argument("--upstream-procs", type=int, default=1)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of the load test: profile a governed call in-process (web and worker side)",
    )
    parser.add_argument(
        "--db-options",
        default="",
        help="query string added to DATABASE_URL (Django OPTIONS via dj-database-url), e.g. "
        "server_side_binding=true&prepare_threshold=2",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="override a Django setting for this run (bench/bench_settings.py), e.g. "
        "--set CELERY_DB_REUSE_MAX=1000; repeatable",
    )
    parser.add_argument(
        "--kill-db-connections",
        action="store_true",
        help="resilience check: terminate every connection to the bench database after the "
        "warm-up (as a PostgreSQL restart would); the governed calls must still succeed",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also measure, with the same client, what the web stack costs before any "
        "governance: GET /healthz (Django, no database) and GET /api/v1/executions/{id} "
        "(DRF, token authentication, one row read)",
    )
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="also MCP tools/call through /mcp (serves toolhub.asgi with uvicorn workers: "
        "REST and MCP on the same ASGI server)",
    )
    parser.add_argument("--profile-calls", type=int, default=300)
    parser.add_argument(
        "--ref",
        help="benchmark this git revision (exported to a temporary directory) instead of the "
        "working tree",
    )
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.mcp and args.server == "gunicorn":
        args.gunicorn_worker_class = "uvicorn_worker.UvicornWorker"
    if args.server == "granian" and importlib.util.find_spec("granian") is None:
        print(
            "--server granian: Granian is not installed (it is not a ToolHub dependency); "
            "install it with: .venv/bin/pip install granian",
            file=sys.stderr,
        )
        return 2
    concurrencies = [int(c) for c in args.concurrency.split(",") if c.strip()]
    # Ctrl-C, kill and a closed terminal all clean up (SIGINT too when it was inherited ignored).
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_interrupt)
    tmp = Path(tempfile.mkdtemp(prefix="toolhub-bench-"))
    src = ROOT
    if args.ref:
        # Benchmark a committed revision: an export of it in the temporary directory.
        src = tmp / "src"
        src.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", args.ref],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    launch = [PY, str(BENCH / "_launch.py")] if args.ref else [PY]
    procs = Processes(tmp, src)
    env = bench_env(tmp, src, args.db_options, parse_overrides(args.set))
    db_created = False
    ok = False
    pg_stats: PgStats | None = None
    # One run at a time on this machine: the database name and Redis db 9 are fixed, and a
    # second run would drop the first one's database and flush its broker.
    run_lock = psycopg.connect(PG_ADMIN_URL, autocommit=True)
    if not run_lock.execute("SELECT pg_try_advisory_lock(%s)", (RUN_LOCK_KEY,)).fetchone()[0]:
        run_lock.close()
        shutil.rmtree(tmp, ignore_errors=True)
        print(
            "another governed_vs_direct.py run is in progress on this machine "
            "(PostgreSQL advisory lock held); try again when it has finished",
            file=sys.stderr,
        )
        return 2
    try:
        # 1. Upstream.
        up_port = free_port()
        upstream = procs.start(
            "upstream",
            [
                PY,
                str(BENCH / "upstream.py"),
                "--port",
                str(up_port),
                "--procs",
                str(args.upstream_procs),
            ],
            env,
        )
        upstream_url = f"http://127.0.0.1:{up_port}"
        wait_until(
            "upstream",
            lambda: httpx.get(f"{upstream_url}/ping?x=1", timeout=1).status_code == 200,
            10,
            procs,
        )
        pipelined, serial = upstream_capacity(up_port)
        print(
            f"upstream {upstream_url}: {pipelined:.0f} req/s pipelined, {serial:.0f} req/s "
            "one-at-a-time",
            flush=True,
        )

        # 2. Database, migrations, seed.
        create_database()
        db_created = True
        flush_redis()
        run_checked([*launch, "manage.py", "migrate", "--noinput"], env, src)
        seed = json.loads(
            run_checked(
                [*launch, str(BENCH / "bench_django.py"), "seed", "--upstream", upstream_url],
                env,
                src,
            )
            .strip()
            .splitlines()[-1]
        )
        print(f"seeded tool {seed['tool_id']}", flush=True)

        # 3. Celery worker (and gunicorn unless profiling).
        celery = procs.start(
            "celery",
            [
                *launch,
                "-m",
                "celery",
                "-A",
                "toolhub",
                "worker",
                "-Q",
                "http,database,mcp,python,default",
                "-P",
                args.celery_pool,
                "-c",
                str(args.celery_concurrency),
                "-n",
                f"bench-{secrets.token_hex(4)}@localhost",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel",
                "WARNING",
            ],
            env,
        )
        if args.profile:
            result = subprocess.run(
                [
                    *launch,
                    str(BENCH / "bench_django.py"),
                    "profile",
                    "--tool-id",
                    seed["tool_id"],
                    "--token",
                    seed["token"],
                    "--calls",
                    str(args.profile_calls),
                ],
                cwd=src,
                env=env,
                check=False,
            )
            ok = result.returncode == 0
            return result.returncode

        port = free_port()
        if args.server == "granian":
            gunicorn_cmd = [
                *launch,
                "-m",
                "granian",
                "--interface",
                "wsgi",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(args.gunicorn_workers),
                "--blocking-threads",
                str(args.gunicorn_threads),
                "--no-access-log",
                "--log-level",
                "warning",
                "toolhub.wsgi:application",
            ]
        else:
            asgi = "uvicorn" in args.gunicorn_worker_class
            gunicorn_cmd = [
                *launch,
                "-m",
                "gunicorn",
                "toolhub.asgi:application" if asgi else "toolhub.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(args.gunicorn_workers),
                "--worker-class",
                args.gunicorn_worker_class,
                "--keep-alive",
                "75",
                "--log-level",
                "warning",
            ]
            if args.gunicorn_worker_class == "gthread":
                gunicorn_cmd += ["--threads", str(args.gunicorn_threads)]
        gunicorn = procs.start("gunicorn", gunicorn_cmd, env)
        base = f"http://127.0.0.1:{port}"
        wait_until(
            "gunicorn",
            lambda: httpx.get(f"{base}/healthz", timeout=2).status_code == 200,
            30,
            procs,
        )
        groups = {"gunicorn": gunicorn.pid, "celery": celery.pid, "upstream": upstream.pid}
        pg_stats = PgStats()

        headers = {"Authorization": f"Bearer {seed['token']}"}
        tool_id = seed["tool_id"]

        def governed_client() -> httpx.Client:
            return httpx.Client(base_url=base, headers=headers, timeout=60, trust_env=False)

        def direct_client() -> httpx.Client:
            return httpx.Client(base_url=upstream_url, timeout=60, trust_env=False)

        def governed(client: httpx.Client, x: int) -> tuple[bool, str, str]:
            response = client.post(
                "/api/v1/executions",
                json={"tool_id": tool_id, "input_data": {"x": x}, "wait": True},
            )
            try:
                body = response.json()
            except ValueError:
                return False, "", f"HTTP {response.status_code}: {response.text[:200]}"
            if (
                response.status_code == 200
                and body.get("status") == "succeeded"
                and (body.get("output_data") or {}).get("data", {}).get("x") == x
            ):
                return True, body["id"], ""
            return False, "", f"HTTP {response.status_code}: {json.dumps(body)[:200]}"

        mcp_headers = {**headers, "Accept": "application/json, text/event-stream"}

        def mcp_client() -> httpx.Client:
            return httpx.Client(base_url=base, headers=mcp_headers, timeout=60, trust_env=False)

        def mcp_session(client: httpx.Client) -> None:
            """A 2025-11-25 client: initialize once, then its session id on each call."""
            opened = client.post("/mcp", json=mcp_message(0, "initialize", MCP_INITIALIZE))
            client.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
            client.headers["MCP-Protocol-Version"] = MCP_INITIALIZE["protocolVersion"]

        def mcp(client: httpx.Client, x: int) -> tuple[bool, str, str]:
            if "Mcp-Session-Id" not in client.headers:  # the thread's first, untimed call
                mcp_session(client)
            params = {"name": seed["tool_name"], "arguments": {"x": x}}
            response = client.post("/mcp", json=mcp_message(x, "tools/call", params))
            answers = [
                json.loads(line[5:])
                for line in response.text.splitlines()
                if line.startswith("data:") and line[5:].strip()
            ]
            result = (answers[-1] if answers else {}).get("result") or {}
            data = (result.get("structuredContent") or {}).get("data") or {}
            if response.status_code == 200 and not result.get("isError") and data.get("x") == x:
                return True, result["_meta"]["io.toolhub/execution"]["id"], ""
            return False, "", f"HTTP {response.status_code}: {response.text[:200]}"

        def noop(client: httpx.Client, x: int) -> tuple[bool, str, str]:
            response = client.get("/healthz")
            if response.status_code == 200 and response.json().get("status") == "ok":
                return True, "", ""
            return False, "", f"HTTP {response.status_code}: {response.text[:200]}"

        read_path: list[str] = []  # one finished execution's URL, set after the warm-up

        def read(client: httpx.Client, x: int) -> tuple[bool, str, str]:
            response = client.get(read_path[0])
            if response.status_code == 200 and response.json().get("status") == "succeeded":
                return True, "", ""
            return False, "", f"HTTP {response.status_code}: {response.text[:200]}"

        def direct(client: httpx.Client, x: int) -> tuple[bool, str, str]:
            response = client.get("/ping", params={"x": x})
            if response.status_code == 200 and response.json().get("x") == x:
                return True, "", ""
            return False, "", f"HTTP {response.status_code}: {response.text[:200]}"

        # Warm-up: the worker must be up before anything is timed.
        with governed_client() as client:
            wait_until(
                "celery worker (first governed call)", lambda: governed(client, 0)[0], 60, procs
            )
            for x in range(args.warmup):
                ok_, ident, _ = governed(client, x)
                if ok_ and not read_path:
                    read_path.append(f"/api/v1/executions/{ident}")
        with direct_client() as client:
            for x in range(args.warmup * 5):
                direct(client, x)
        if args.mcp:
            with mcp_client() as client:
                for x in range(args.warmup):
                    mcp(client, x)
        if args.kill_db_connections:
            # Resilience check: every process loses its database connection (as after a
            # PostgreSQL restart or failover); the governed calls below must still succeed.
            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                killed = conn.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = %s AND pid <> pg_backend_pid()",
                    (DB_NAME,),
                ).fetchone()[0]
            print(f"terminated {killed} database connection(s) of the bench database", flush=True)

        results: list[RunResult] = []
        phases: dict[int, dict] = {}
        modes = [("direct", direct_client, direct), ("governed", governed_client, governed)]
        if args.mcp:
            modes += [("mcp", mcp_client, mcp)]
        if args.floor:
            modes += [("noop", governed_client, noop), ("read", governed_client, read)]
        for c in concurrencies:
            for kind, make, call in modes:
                print(f"running {kind} c={c} n={args.n} ...", flush=True)
                result = run_load(
                    kind=kind,
                    concurrency=c,
                    n=args.n,
                    ramp=args.ramp if c > 1 else 0,
                    make_client=make,
                    call=call,
                    groups=groups,
                    pg_stats=pg_stats,
                    on_start=(lambda: connections_per_worker(port, gunicorn.pid))
                    if kind == "governed"
                    else None,
                )
                procs.check_alive()
                print(
                    f"  {result.rps:.1f} req/s p50 {result.pct(50):.2f} ms "
                    f"p99 {result.pct(99):.2f} ms errors {result.errors}",
                    flush=True,
                )
                results.append(result)
                if kind == "governed":
                    phases[c] = phase_breakdown(result.records)

        # Durability: every measured governed call's row is final and succeeded.
        time.sleep(0.5)
        ids = [r[0] for res in results if res.kind in ("governed", "mcp") for r in res.records]
        rows = verify_rows(ids)
        meta = {
            "machine": machine(),
            "source": source_label(args.ref),
            "upstream_pipelined": pipelined,
            "upstream_serial": serial,
            "phases": phases,
            "rows": rows,
        }
        text = report(results, args, meta)
        print("\n" + text)
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "meta": meta | {"phases": {str(k): v for k, v in phases.items()}},
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
                    },
                    indent=2,
                )
            )
        bad = sum(r.errors for r in results)
        lost = rows["measured_ids"] - rows["measured_succeeded"]
        ok = bad == 0 and lost == 0
        return 0 if ok else 1
    except KeyboardInterrupt:
        print("\ninterrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        # A second Ctrl-C (or a signal sent to the whole process group) must not cut the cleanup short.
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        if not ok:
            print(procs.tails(), file=sys.stderr)
        procs.stop_all()
        if pg_stats is not None:
            pg_stats.close()
        if db_created:
            with contextlib.suppress(Exception):
                drop_database()
        with contextlib.suppress(Exception):
            flush_redis()
        shutil.rmtree(tmp, ignore_errors=True)
        run_lock.close()  # releases the advisory lock


if __name__ == "__main__":
    sys.exit(main())
