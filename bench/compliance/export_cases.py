"""Exports of 100k rows (API and admin, CSV and JSONL) and of a whole quarter: speed and memory."""

from __future__ import annotations

import time
import tracemalloc
from urllib.parse import urlencode

from compliance.measure import RSSSampler
from compliance.samples import Samples


class Exports:
    """Cases that stream an export to the end, timing it and sampling this process's memory."""

    def __init__(self, client) -> None:
        self.client = client
        self.heap_peak: dict = {}
        self.first_byte: dict = {}

    def consume(self, url):
        def fn():
            t0 = time.perf_counter()
            response = self.client.get(url)
            nbytes = nlines = 0
            for piece in response.streaming_content if response.streaming else [response.content]:
                if not nbytes:
                    self.first_byte["ms"] = (time.perf_counter() - t0) * 1000
                nbytes += len(piece)
                nlines += piece.count(b"\n")
            return response.status_code, nbytes, nlines

        return fn

    def case(self, fmt, url, heap=True):
        fn = self.consume(url)

        def measured():
            with RSSSampler() as rss:
                t0 = time.perf_counter()
                status, nbytes, nlines = fn()
                el = time.perf_counter() - t0
            rows = nlines - 1 if fmt == "csv" else nlines
            ttfb = self.first_byte.get("ms", 0.0)
            result = {
                "elapsed_s": el,
                "status_code": status,
                "rows": rows,
                "bytes": nbytes,
                "rss_growth_mb": round(rss.growth_mb, 1),
                "rows_per_s": round(rows / el),
                "first_byte_ms": round(ttfb),
                "note": f"{rows:,} rows, {nbytes / 1e6:.0f} MB, {rows / el:,.0f} rows/s, "
                f"first byte {ttfb:,.0f} ms, RSS +{rss.growth_mb:.0f} MB",
            }
            if heap:
                peak = self._heap_peak(fn)
                result["py_heap_peak_mb"] = round(peak, 1)
                result["note"] += f", Python heap peak {peak:.1f} MB"
            return result

        return measured

    def _heap_peak(self, fn) -> float:
        if id(fn) not in self.heap_peak:  # once per case: tracemalloc is slow
            tracemalloc.start()
            fn()
            self.heap_peak[id(fn)] = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
        return self.heap_peak[id(fn)]


def _cuts():
    """When the newest 100,000 executions, and the newest 100,000 audit events, begin."""
    from executions.models import Execution
    from registry.models import AuditEvent

    cut = Execution.objects.order_by("-created_at").values_list("created_at", flat=True)[99_999]
    last_id = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
    audit_cut = (
        AuditEvent.objects.filter(id=last_id - 99_999).values_list("occurred_at", flat=True).first()
    )
    return cut.isoformat(), audit_cut.isoformat()


def _hundred_thousand(fmt: str, cut: str, audit_cut: str) -> list[tuple[str, str]]:
    return [
        (
            f"{fmt} executions 100k: GET /api/v1/executions/export",
            f"/api/v1/executions/export?{urlencode({'format': fmt, 'created_after': cut})}",
        ),
        (
            f"{fmt} executions 100k: admin export of the filtered changelist",
            f"/admin/executions/execution/export/{fmt}/?{urlencode({'created_from': cut})}",
        ),
        (
            f"{fmt} audit 100k: GET /api/v1/audit/export",
            f"/api/v1/audit/export?{urlencode({'format': fmt, 'occurred_after': audit_cut})}",
        ),
        (
            f"{fmt} audit 100k: admin export of the filtered changelist",
            f"/admin/registry/auditevent/export/{fmt}/?{urlencode({'occurred_from': audit_cut})}",
        ),
    ]


def run_exports(b, client, s: Samples) -> None:
    exports = Exports(client)
    cut, audit_cut = _cuts()
    for fmt in ("csv", "jsonl"):
        for label, url in _hundred_thousand(fmt, cut, audit_cut):
            b.run("export", label, exports.case(fmt, url), runs=2)
    # the whole last quarter, to see a big export's memory stays flat
    quarter = {"created_after": s.q_start.isoformat(), "created_before": s.q_end.isoformat()}
    b.run(
        "export",
        "jsonl executions, whole last quarter: GET /api/v1/executions/export",
        exports.case(
            "jsonl", "/api/v1/executions/export?" + urlencode({"format": "jsonl", **quarter})
        ),
        runs=0,
    )
    audit_quarter = {
        "occurred_after": quarter["created_after"],
        "occurred_before": quarter["created_before"],
    }
    b.run(
        "export",
        "jsonl audit, whole last quarter: GET /api/v1/audit/export",
        exports.case(
            "jsonl",
            "/api/v1/audit/export?" + urlencode({"format": "jsonl", **audit_quarter}),
            heap=False,
        ),
        runs=0,
    )
    pair = {"tool_id": str(s.busy[0]), "agent_id": str(s.busy[1])}
    b.run(
        "export",
        "jsonl: every call of tool X by agent Y last quarter (busy pair): GET /api/v1/executions/export",
        exports.case(
            "jsonl",
            "/api/v1/executions/export?" + urlencode({"format": "jsonl", **pair, **quarter}),
        ),
        runs=1,
    )
