"""Usage statistics of executions: counts, success rate, denials, latency percentiles, cost.

Reads only: every function takes the caller's visible queryset (see
``selectors.execution_visible_to``) and never widens it.

Definitions (the same in the API, the admin dashboard and the tests):

- the window is ``[start, end)`` on ``created_at`` (when the call was asked for),
  so every query is a range scan of the ``created_at`` index, or of
  ``(tool, created_at)`` / ``(agent, created_at)`` when filtered;
- ``calls`` counts every execution, admitted or refused; ``by_status`` splits
  them by status; ``denied`` is status ``denied`` (``invalid`` arguments are
  counted in ``by_status`` only) and ``denials_by_reason`` splits it by
  ``reason_code``;
- ``success_rate`` = succeeded / (succeeded + failed), ``None`` with no finished run;
- ``p50_ms`` / ``p95_ms``: continuous percentiles (linear interpolation, what
  PostgreSQL's ``percentile_cont`` computes) of ``execution_time_ms`` over the
  finished runs (succeeded or failed) that have a latency;
- ``cost``: sum of ``cost`` (a call without a cost adds nothing).

Queries: one aggregate query per grouping (totals, per group, per time
bucket), plus one small query per grouping for the denial reasons. On
PostgreSQL the percentiles are SQL aggregates inside that one query. Other
databases (the embedded SQLite) have no ``percentile_cont``: the percentiles
are computed in Python over at most ``PERCENTILE_SAMPLE`` finished runs, the
most recent of the window (approximate when the window holds more).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import Aggregate, Count, FloatField, Max, Q, QuerySet, Sum
from django.db.models.functions import TruncDay, TruncHour, TruncWeek
from django.utils import timezone

from executions.models import Execution, ExecutionStatus
from registry.models import Agent

GROUPINGS = ("tool", "agent")
INTERVALS = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
_TRUNC = {"hour": TruncHour, "day": TruncDay, "week": TruncWeek}

DEFAULT_RANGE = timedelta(days=7)
MAX_RANGE = timedelta(days=366)
# Hourly buckets over more than a month make thousands of points nobody can read.
MAX_HOURLY_RANGE = timedelta(days=31)
PERCENTILE_SAMPLE = 20_000

FINISHED = (ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED)
_KEY_FIELD = {"tool": "tool_id", "agent": "agent_id"}
NO_TOOL = "(unknown tool)"
NO_AGENT = "(people, no agent)"


class StatsParamError(ValueError):
    """A bad statistics parameter; ``field`` names it (the API answers 400)."""

    def __init__(self, field_name: str, message: str):
        super().__init__(message)
        self.field = field_name
        self.message = message


class PercentileCont(Aggregate):
    """PostgreSQL's ``percentile_cont(f) WITHIN GROUP (ORDER BY expr)`` (linear interpolation)."""

    function = "percentile_cont"
    name = "PercentileCont"
    output_field = FloatField()
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, fraction: float, expression, **extra):
        fraction = float(fraction)
        if not 0.0 <= fraction <= 1.0:
            raise ValueError("fraction must be between 0 and 1")
        # A float we validated, rendered as a literal: never user text.
        super().__init__(expression, fraction=repr(fraction), **extra)


def percentile_cont(values: Iterable[float], fraction: float) -> float | None:
    """The same definition as ``percentile_cont`` in SQL, in Python (``None`` when empty)."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class StatsWindow:
    """A validated time range ``[start, end)`` (aware datetimes)."""

    start: datetime
    end: datetime

    @property
    def span(self) -> timedelta:
        return self.end - self.start


def _aware(value: datetime) -> datetime:
    return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)


def _in_calendar(value: datetime, field_name: str) -> datetime:
    """``value`` if it stays in the years 1-9999 once in UTC (where the database compares it)."""
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise StatsParamError(
            field_name, "Out of range: in UTC it falls outside the years 1 to 9999."
        ) from None
    return value


def _shift(value: datetime, delta: timedelta, field_name: str, message: str) -> datetime:
    """``value + delta``, or ``StatsParamError(field_name, message)`` outside the calendar."""
    try:
        shifted = value + delta
        shifted.astimezone(UTC)
    except OverflowError:
        raise StatsParamError(field_name, message) from None
    return shifted


def stats_window(
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    interval: str | None = None,
    now: datetime | None = None,
) -> StatsWindow:
    """The window to report on: the last 7 days by default, at most 366 days.

    Only ``start``: up to now. Only ``end``: the 7 days before it. Naive
    datetimes are taken as UTC. Raises ``StatsParamError`` naming the field.
    """
    now = now or timezone.now()
    end = _in_calendar(_aware(end), "to") if end is not None else None
    start = _in_calendar(_aware(start), "from") if start is not None else None
    if end is None:
        if start is None or start < now:
            end = now
        else:
            end = _shift(
                start,
                DEFAULT_RANGE,
                "from",
                f"Too late: the default range, {DEFAULT_RANGE.days} days from it, would end "
                "after the year 9999; give 'to' as well.",
            )
    if start is None:
        start = _shift(
            end,
            -DEFAULT_RANGE,
            "to",
            f"Too early: the default range, {DEFAULT_RANGE.days} days up to it, would start "
            "before the year 1; give 'from' as well.",
        )
    if start >= end:
        raise StatsParamError("to", "Must be later than 'from'.")
    if end - start > MAX_RANGE:
        raise StatsParamError(
            "from",
            f"The range spans {(end - start).days} days; at most {MAX_RANGE.days} days are allowed.",
        )
    if interval is not None and interval not in INTERVALS:
        raise StatsParamError("interval", f"Use one of: {', '.join(INTERVALS)}.")
    if interval == "hour" and end - start > MAX_HOURLY_RANGE:
        raise StatsParamError(
            "interval",
            f"Hourly buckets cover at most {MAX_HOURLY_RANGE.days} days; use 'day' or 'week'.",
        )
    return StatsWindow(start=start, end=end)


def bucket_start(moment: datetime, interval: str) -> datetime:
    """The start of the UTC bucket holding ``moment`` (weeks start on Monday, like date_trunc)."""
    moment = _aware(moment).astimezone(UTC)
    if interval == "hour":
        return moment.replace(minute=0, second=0, microsecond=0)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if interval == "day":
        return day
    return day - timedelta(days=day.weekday())


def bucket_starts(window: StatsWindow, interval: str) -> list[datetime]:
    """Every bucket start touching the window, oldest first (for gap-free series)."""
    step = INTERVALS[interval]
    current = bucket_start(window.start, interval)
    starts = []
    while current < window.end:
        starts.append(current)
        try:
            current += step
        except OverflowError:  # the last bucket of the calendar (year 9999)
            break
    return starts


@dataclass
class Metrics:
    """The numbers of one group, bucket or total."""

    calls: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    p50_ms: float | None = None
    p95_ms: float | None = None
    cost: Decimal | None = None
    denials_by_reason: dict[str, int] | None = None

    def count(self, status: str) -> int:
        return self.by_status.get(status, 0)

    @property
    def succeeded(self) -> int:
        return self.count(ExecutionStatus.SUCCEEDED)

    @property
    def failed(self) -> int:
        return self.count(ExecutionStatus.FAILED)

    @property
    def denied(self) -> int:
        return self.count(ExecutionStatus.DENIED)

    @property
    def success_rate(self) -> float | None:
        finished = self.succeeded + self.failed
        return self.succeeded / finished if finished else None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "calls": self.calls,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "denied": self.denied,
            "success_rate": None if self.success_rate is None else round(self.success_rate, 6),
            "p50_ms": None if self.p50_ms is None else round(self.p50_ms, 3),
            "p95_ms": None if self.p95_ms is None else round(self.p95_ms, 3),
            "cost": str(self.cost) if self.cost is not None else "0",
            "by_status": {status: self.count(status) for status in ExecutionStatus.values},
        }
        if self.denials_by_reason is not None:
            data["denials_by_reason"] = dict(
                sorted(self.denials_by_reason.items(), key=lambda item: (-item[1], item[0]))
            )
        return data


@dataclass
class StatsRow:
    """One row of a grouping: its group (id and name), its bucket, its metrics."""

    group_id: str | None = None
    name: str | None = None
    bucket: datetime | None = None
    metrics: Metrics = field(default_factory=Metrics)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.bucket is not None:
            data["bucket"] = self.bucket.isoformat()
        else:
            data["id"] = self.group_id
            data["name"] = self.name
        data.update(self.metrics.as_dict())
        return data


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
