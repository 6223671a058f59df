"""What /api/v1/stats returns: totals, groups and time series, empty buckets filled."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import QuerySet

from executions.models import Execution
from executions.stats.guards import guard_decision_counts
from executions.stats.queries import execution_stats
from executions.stats.rows import Metrics, StatsRow
from executions.stats.window import StatsWindow, bucket_starts


def fill_series(rows: list[StatsRow], window: StatsWindow, interval: str) -> list[StatsRow]:
    """One row per bucket of the window, oldest first, empty buckets as zero rows."""
    by_bucket = {row.bucket: row for row in rows}
    return [
        by_bucket.get(start) or StatsRow(bucket=start, metrics=Metrics(denials_by_reason={}))
        for start in bucket_starts(window, interval)
    ]


def stats_report(
    queryset: QuerySet[Execution],
    *,
    window: StatsWindow,
    group_by: str = "tool",
    interval: str | None = None,
    tool_id: Any = None,
    agent_id: Any = None,
) -> dict[str, Any]:
    """Totals, one row per group and, with ``interval``, time series: what ``/api/v1/stats`` returns.

    ``series`` holds every bucket of the window (zeros where nothing
    happened); each group's ``series`` holds only its non-empty buckets.
    """
    common = {"window": window, "tool_id": tool_id, "agent_id": agent_id}
    totals = execution_stats(queryset, **common)
    total = totals[0].metrics if totals else Metrics(denials_by_reason={})
    groups = execution_stats(queryset, group_by=group_by, **common)
    report: dict[str, Any] = {
        "from": window.start.isoformat(),
        "to": window.end.isoformat(),
        "group_by": group_by,
        "interval": interval,
        "totals": total.as_dict(),
        "groups": [row.as_dict() for row in groups],
        "guards": guard_decision_counts(queryset, **common),
    }
    if interval:
        series = execution_stats(queryset, interval=interval, **common)
        report["series"] = [row.as_dict() for row in fill_series(series, window, interval)]
        per_group: dict[str | None, list[dict]] = defaultdict(list)
        for row in execution_stats(queryset, group_by=group_by, interval=interval, **common):
            per_group[row.group_id].append(row.as_dict())
        for group, data in zip(groups, report["groups"], strict=True):
            data["series"] = per_group.get(group.group_id, [])
    return report
