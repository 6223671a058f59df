"""N calls of one mode over c threads, each with its own keep-alive client, and what they cost."""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from harness.cpu import cpu_snapshot
from harness.postgres import PgStats

# One call: (answer checked, the execution id of a governed call or "", what went wrong)
Call = Callable[[httpx.Client, int], tuple[bool, str, str]]


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


class _Threads:
    """The calling threads of one measurement and what each of them saw."""

    def __init__(self, concurrency: int, n: int, ramp: float, make_client, call: Call) -> None:
        self.concurrency = concurrency
        self.ramp = ramp
        self.make_client = make_client
        self.call = call
        self.shares = [
            n // concurrency + (1 if i < n % concurrency else 0) for i in range(concurrency)
        ]
        self.latencies: list[list[float]] = [[] for _ in range(concurrency)]
        self.records: list[list[tuple[str, float, float]]] = [[] for _ in range(concurrency)]
        self.errors = [0] * concurrency
        self.samples: list[str] = []
        self.ends = [0.0] * concurrency
        self.barrier = threading.Barrier(concurrency + 1)
        self.failures: list[BaseException] = []
        self.threads = [
            threading.Thread(target=self._worker, args=(i,), daemon=True)
            for i in range(concurrency)
        ]

    def _worker(self, index: int) -> None:
        try:
            if self.concurrency > 1:
                time.sleep(index * self.ramp / self.concurrency)
            with self.make_client() as client:
                self.call(client, 900_000_000 + index)  # opens the connection; not timed
                self.barrier.wait()
                self._calls(client, index)
                self.ends[index] = time.perf_counter()
        except BaseException as exc:
            self.failures.append(exc)
            self.barrier.abort()

    def _calls(self, client: httpx.Client, index: int) -> None:
        base = index * 1_000_000
        for k in range(self.shares[index]):
            sent = time.time()
            started = time.perf_counter()
            try:
                ok, ident, problem = self.call(client, base + k)
            except httpx.HTTPError as exc:
                ok, ident, problem = False, "", f"{type(exc).__name__}: {exc}"
            elapsed = time.perf_counter() - started
            self.latencies[index].append(elapsed)
            if ok:
                if ident:
                    self.records[index].append((ident, sent, elapsed))
            else:
                self.errors[index] += 1
                if len(self.samples) < 5:
                    self.samples.append(problem[:300])

    def start_and_wait_ready(self) -> None:
        """Every thread has its connection open and waits at the barrier (or one failed)."""
        for thread in self.threads:
            thread.start()
        while self.barrier.n_waiting < self.concurrency and not self.barrier.broken:
            time.sleep(0.005)

    def go(self, kind: str) -> float:
        """Release the threads, wait for the last; returns when they started."""
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            for thread in self.threads:
                thread.join()
            raise RuntimeError(f"{kind} load failed: {self.failures[:1]!r}") from None
        start = time.perf_counter()
        for thread in self.threads:
            thread.join()
        return start


def run_load(
    *,
    kind: str,
    concurrency: int,
    n: int,
    ramp: float,
    make_client: Callable[[], httpx.Client],
    call: Call,
    groups: dict[str, int],
    db_name: str,
    pg_stats: PgStats | None = None,
    on_start: Callable[[], list[int]] | None = None,
) -> RunResult:
    """``n`` calls over ``concurrency`` threads, each with its own keep-alive client.

    The threads open their connection one after the other over ``ramp`` seconds (one
    un-timed call each), wait for each other, then all make their calls at once.
    """
    threads = _Threads(concurrency, n, ramp, make_client, call)
    threads.start_and_wait_ready()
    # Every thread has its connection open and waits: count connections and CPU, then go.
    distribution = on_start() if on_start and not threads.barrier.broken else []
    pg_before = pg_stats.snapshot() if pg_stats else {}
    cpu_before = cpu_snapshot(groups, db_name)
    start = threads.go(kind)
    cpu_after = cpu_snapshot(groups, db_name)
    if threads.failures:
        raise RuntimeError(f"{kind} load failed: {threads.failures[0]!r}")
    pg_delta = {}
    if pg_stats:
        time.sleep(1.5)  # backends report their counters when idle, at most once a second
        pg_after = pg_stats.snapshot()
        pg_delta = {k: pg_after[k] - pg_before[k] for k in pg_after}
    return RunResult(
        kind=kind,
        concurrency=concurrency,
        n=n,
        elapsed=max(threads.ends) - start,
        latencies=[x for part in threads.latencies for x in part],
        errors=sum(threads.errors),
        error_samples=threads.samples,
        records=[r for part in threads.records for r in part],
        cpu={k: cpu_after[k] - cpu_before[k] for k in cpu_after},
        worker_connections=distribution,
        pg=pg_delta,
    )
