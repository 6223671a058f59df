"""execution_stats: one aggregate query per grouping over the caller's visible executions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import Count, Max, Q, QuerySet, Sum

from executions.models import Execution, ExecutionStatus
from executions.stats.percentiles import PercentileCont, percentile_cont
from executions.stats.rows import Metrics, StatsRow
from executions.stats.window import (
    _KEY_FIELD,
    _TRUNC,
    FINISHED,
    GROUPINGS,
    INTERVALS,
    NO_AGENT,
    NO_TOOL,
    PERCENTILE_SAMPLE,
    StatsParamError,
    StatsWindow,
)
from registry.models import Agent


def _in_window(
    queryset: QuerySet[Execution],
    window: StatsWindow,
    *,
    tool_id: Any = None,
    agent_id: Any = None,
) -> QuerySet[Execution]:
    qs = queryset.filter(created_at__gte=window.start, created_at__lt=window.end)
    if tool_id is not None:
        qs = qs.filter(tool_id=tool_id)
    if agent_id is not None:
        qs = qs.filter(agent_id=agent_id)
    # No select_related joins and no default ordering in a GROUP BY.
    return qs.select_related(None).order_by()


def _aggregates(sql_percentiles: bool) -> dict[str, Any]:
    aggregates: dict[str, Any] = {"_calls": Count("pk"), "_cost": Sum("cost")}
    for status in ExecutionStatus.values:
        aggregates[f"_s_{status}"] = Count("pk", filter=Q(status=status))
    if sql_percentiles:
        finished = Q(status__in=FINISHED, execution_time_ms__isnull=False)
        aggregates["_p50"] = PercentileCont(0.5, "execution_time_ms", filter=finished)
        aggregates["_p95"] = PercentileCont(0.95, "execution_time_ms", filter=finished)
    return aggregates


def _group_values(group_by: str | None, interval: str | None) -> tuple[list[str], dict[str, Any]]:
    names: list[str] = []
    expressions: dict[str, Any] = {}
    if group_by is not None:
        names.append(_KEY_FIELD[group_by])
    if interval is not None:
        expressions["_bucket"] = _TRUNC[interval]("created_at", tzinfo=UTC)
    return names, expressions


def _row_key(row: dict, group_by: str | None, interval: str | None) -> tuple:
    key = row[_KEY_FIELD[group_by]] if group_by else None
    bucket = row["_bucket"] if interval else None
    return (str(key) if key is not None else None, bucket)


def execution_stats(
    queryset: QuerySet[Execution],
    *,
    window: StatsWindow,
    group_by: str | None = None,
    interval: str | None = None,
    tool_id: Any = None,
    agent_id: Any = None,
    with_reasons: bool = True,
    sql_percentiles: bool | None = None,
) -> list[StatsRow]:
    """Aggregate ``queryset`` over ``window``, grouped by tool/agent and/or time bucket.

    With neither ``group_by`` nor ``interval`` there is exactly one row (the
    totals). Rows are ordered by bucket, then by calls (most first), then name.
    Empty groups and buckets are left out (see ``fill_series``).
    """
    if group_by is not None and group_by not in GROUPINGS:
        raise StatsParamError("group_by", f"Use one of: {', '.join(GROUPINGS)}.")
    if interval is not None and interval not in INTERVALS:
        raise StatsParamError("interval", f"Use one of: {', '.join(INTERVALS)}.")
    if sql_percentiles is None:
        sql_percentiles = connection.vendor == "postgresql"
    qs = _in_window(queryset, window, tool_id=tool_id, agent_id=agent_id)
    names, expressions = _group_values(group_by, interval)
    aggregates = _aggregates(sql_percentiles)
    if group_by == "tool":
        aggregates["_name"] = Max("tool_name")

    if names or expressions:
        result = list(qs.values(*names, **expressions).annotate(**aggregates))
    else:
        result = [qs.aggregate(**aggregates)]

    rows = _stats_rows(result, group_by, interval)

    if not sql_percentiles:
        _python_percentiles(qs, rows, group_by, interval)
    if with_reasons:
        _denials_by_reason(qs, rows, group_by, interval)
    if group_by is not None:
        _name_groups(rows.values(), group_by)
    return sorted(
        rows.values(),
        key=lambda r: (
            r.bucket or datetime.min.replace(tzinfo=UTC),
            -r.metrics.calls,
            r.name or "",
        ),
    )


def _stats_rows(
    result: list[dict], group_by: str | None, interval: str | None
) -> dict[tuple, StatsRow]:
    """The aggregate rows by (group, bucket); groups and buckets without calls left out."""
    rows: dict[tuple, StatsRow] = {}
    for row in result:
        if not row["_calls"]:
            continue
        group_id, bucket = _row_key(row, group_by, interval)
        metrics = Metrics(
            calls=row["_calls"],
            by_status={s: row[f"_s_{s}"] for s in ExecutionStatus.values if row[f"_s_{s}"]},
            p50_ms=row.get("_p50"),
            p95_ms=row.get("_p95"),
            cost=row["_cost"],
        )
        rows[(group_id, bucket)] = StatsRow(
            group_id=group_id, name=row.get("_name") or None, bucket=bucket, metrics=metrics
        )
    return rows


def _python_percentiles(qs, rows: dict[tuple, StatsRow], group_by, interval) -> None:
    names, expressions = _group_values(group_by, interval)
    sample = (
        qs.filter(status__in=FINISHED, execution_time_ms__isnull=False)
        .annotate(**expressions)
        .order_by("-created_at")
        .values(*names, *expressions, "execution_time_ms")[:PERCENTILE_SAMPLE]
    )
    latencies: dict[tuple, list[float]] = defaultdict(list)
    for row in sample:
        latencies[_row_key(row, group_by, interval)].append(row["execution_time_ms"])
    for key, values in latencies.items():
        if key in rows:
            rows[key].metrics.p50_ms = percentile_cont(values, 0.5)
            rows[key].metrics.p95_ms = percentile_cont(values, 0.95)


def _denials_by_reason(qs, rows: dict[tuple, StatsRow], group_by, interval) -> None:
    names, expressions = _group_values(group_by, interval)
    for row in rows.values():
        row.metrics.denials_by_reason = {}
    denials = (
        qs.filter(status=ExecutionStatus.DENIED)
        .values(*names, "reason_code", **expressions)
        .annotate(_n=Count("pk"))
    )
    for row in denials:
        target = rows.get(_row_key(row, group_by, interval))
        if target is not None:
            reason = row["reason_code"] or "unspecified"
            target.metrics.denials_by_reason[reason] = row["_n"]


def _name_groups(rows: Iterable[StatsRow], group_by: str) -> None:
    rows = list(rows)
    if group_by == "agent":
        ids = {row.group_id for row in rows if row.group_id}
        names = {
            str(pk): name for pk, name in Agent.objects.filter(pk__in=ids).values_list("pk", "name")
        }
        for row in rows:
            row.name = names.get(row.group_id, row.group_id) if row.group_id else NO_AGENT
    else:
        for row in rows:
            if row.group_id is None:
                row.name = NO_TOOL
