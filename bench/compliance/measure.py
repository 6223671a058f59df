"""Timing one case: its runs, its queries, the slowest one EXPLAINed, and the memory it took."""

from __future__ import annotations

import hashlib
import os
import re
import statistics
import threading
import time

from compliance.environment import SLOW_MS


class RSSSampler:
    """Peak resident memory of this process while a block runs (sampled every 5 ms)."""

    def __enter__(self):
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.base = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _rss(self):
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * self.page

    def _run(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def growth_mb(self):
        return (self.peak - self.base) / 1e6


class Bench:
    def __init__(self, only: str | None):
        from django.db import connection
        from django.test import Client

        self.connection = connection
        self.Client = Client
        self.only = re.compile(only) if only else None
        self.rows: list[dict] = []
        self.explained: dict[str, str] = {}

    def run(self, group, label, fn, *, runs=4, budget_s=90.0, expect=(200,)):
        from django.test.utils import CaptureQueriesContext

        if self.only and not self.only.search(f"{group} {label}"):
            return None
        times, captured, info = [], None, {}
        for i in range(runs + 1):
            with CaptureQueriesContext(self.connection) as cq:
                t0 = time.perf_counter()
                result = fn()
                elapsed = time.perf_counter() - t0
            if isinstance(result, dict) and "elapsed_s" in result:
                elapsed = result.pop("elapsed_s")  # the case timed itself (exports)
            status = (
                result.pop("status_code", 200) if isinstance(result, dict) else result.status_code
            )
            if status not in expect:
                if status in (301, 302):
                    info["error"] = f"HTTP {status} -> {result['Location']}"
                else:
                    body = (
                        b""
                        if getattr(result, "streaming", False)
                        else getattr(result, "content", b"")
                    )
                    info["error"] = f"HTTP {status} {body[:300]!r}"
            elif (
                not isinstance(result, dict)
                and not result.streaming
                and b'id="result_list"' in result.content
            ):
                table = re.search(rb'id="result_list".*?</table>', result.content, re.S)
                info["rows_shown"] = table.group(0).count(b"<tr") - 1 if table else None
            if isinstance(result, dict):
                info.update(result)
            times.append(elapsed)
            captured = list(cq.captured_queries)
            if sum(times) > budget_s and i >= 1:
                break
        warm = times[1:] or times
        queries = [q for q in captured if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
        slow = max(queries, key=lambda q: float(q["time"]), default=None)
        row = {
            "group": group,
            "case": label,
            "first_ms": round(times[0] * 1000, 1),
            "median_ms": round(statistics.median(warm) * 1000, 1),
            "runs": len(times),
            "queries": len(queries),
            "slowest_ms": round(float(slow["time"]) * 1000, 1) if slow else None,
            "slowest_sql": slow["sql"][:600] if slow else None,
            **info,
        }
        for q in queries:
            if float(q["time"]) * 1000 >= SLOW_MS:
                self.explain(q["sql"])
        if slow and float(slow["time"]) * 1000 >= SLOW_MS:
            row["explain_key"] = self._key(slow["sql"])
        self.rows.append(row)
        print(
            f"{group:10s} {label:58s} first {row['first_ms']:9.1f} ms  median {row['median_ms']:9.1f} ms  "
            f"{row['queries']:3d} q  slowest {row['slowest_ms']} ms  rows {info.get('rows_shown', '-')} "
            f"{info.get('note', '')} {info.get('error', '')}",
            flush=True,
        )
        return row

    @staticmethod
    def _key(sql):
        return hashlib.sha256(re.sub(r"'[^']*'|\b\d+\b", "?", sql).encode()).hexdigest()[:10]

    def explain(self, sql):
        key = self._key(sql)
        # a server-side cursor (iterator()) is logged as DECLARE ... FOR SELECT: explain the SELECT
        sql = re.sub(r"^DECLARE .*? CURSOR (WITH(OUT)? HOLD )?FOR ", "", sql.lstrip())
        if key in self.explained or not sql.upper().startswith("SELECT"):
            return
        with self.connection.cursor() as cur:
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            plan = "\n".join(r[0] for r in cur.fetchall())
        self.explained[key] = {"sql": sql, "plan": plan}


def getter(client, url):
    """A case: GET ``url`` and read the whole answer (streamed or not)."""

    def fn():
        response = client.get(url)
        if getattr(response, "streaming", False):
            for _ in response.streaming_content:
                pass
        else:
            _ = response.content
        return response

    return fn


def walker(client, url, pages):
    """A case: follow the API's ``next`` cursors from ``url`` for at most ``pages`` pages."""

    def fn():
        nxt, got, last_ms, rows = url, 0, 0.0, 0
        while nxt and got < pages:
            t0 = time.perf_counter()
            response = client.get(nxt.replace("http://testserver", ""))
            last_ms = (time.perf_counter() - t0) * 1000
            body = response.json()
            rows += len(body["results"])
            nxt = body.get("next")
            got += 1
        return {
            "pages": got,
            "rows": rows,
            "last_page_ms": round(last_ms, 1),
            "note": f"{got} pages, {rows} rows, last page alone {last_ms:.1f} ms",
        }

    return fn
