"""The statistics' parameters: groupings, intervals, the time window and its buckets."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models.functions import TruncDay, TruncHour, TruncWeek
from django.utils import timezone

from executions.models import ExecutionStatus

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
