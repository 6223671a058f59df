"""How fast the audit chain is verified: the newest million events, then all of it if that is quick."""

from __future__ import annotations

import time

from compliance.measure import RSSSampler

SLICE = 1_000_000
FULL_IF_UNDER_S = 15 * 60


def run_verify(full: bool) -> dict:
    from registry.models import AuditEvent
    from registry.services.audit_chain import _rows_from, event_hash

    head_seq = AuditEvent.objects.order_by("-sequence").values_list("sequence", flat=True).first()
    start = max(head_seq - SLICE, 0)
    prev = (
        AuditEvent.objects.filter(sequence=start).values_list("hash", flat=True).first()
        if start
        else "0" * 64
    )
    t0 = time.perf_counter()
    checked = 0
    hash_s = 0.0
    for row in _rows_from(start):
        h0 = time.perf_counter()
        digest = event_hash(prev, row, row["sequence"])
        hash_s += time.perf_counter() - h0
        assert digest == row["hash"] and row["prev_hash"] == prev, (
            f"chain broken at {row['sequence']}"
        )
        prev = digest
        checked += 1
    el = time.perf_counter() - t0
    rate = checked / el
    verify = {
        "slice": {
            "events": checked,
            "seconds": round(el, 1),
            "events_per_s": round(rate),
            "event_hash_share": round(hash_s / el, 2),
            "estimated_full_s": round(head_seq / rate),
        }
    }
    print(
        f"verify slice: last {checked:,} events in {el:.1f} s = {rate:,.0f} events/s "
        f"(event_hash {hash_s / el:.0%} of it); full chain estimated {head_seq / rate / 60:.1f} min",
        flush=True,
    )
    if head_seq / rate < FULL_IF_UNDER_S and full:
        verify["full"] = _full()
    return verify


def _full() -> dict:
    from registry.services.audit_chain import audit_verify

    with RSSSampler() as rss:
        t0 = time.perf_counter()
        report = audit_verify()
        el = time.perf_counter() - t0
    print(
        f"audit_verify (full): ok={report.ok} checked {report.checked:,} in {el:.0f} s = "
        f"{report.checked / el:,.0f} events/s, RSS +{rss.growth_mb:.0f} MB",
        flush=True,
    )
    return {
        "ok": report.ok,
        "checked": report.checked,
        "seconds": round(el, 1),
        "events_per_s": round(report.checked / el),
        "rss_growth_mb": round(rss.growth_mb, 1),
        "problem": report.problem and report.problem.message,
        "warnings": report.warnings,
    }
