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

``guards``: every guard decision counted per tool, guard and action.

The package, one concept a module: ``window`` (parameters, window, buckets),
``percentiles``, ``rows`` (``Metrics``, ``StatsRow``), ``queries``
(``execution_stats``) and ``report`` (``stats_report``, ``fill_series``).
"""

from __future__ import annotations

from executions.stats.guards import guard_decision_counts
from executions.stats.percentiles import PercentileCont, percentile_cont
from executions.stats.queries import execution_stats
from executions.stats.report import fill_series, stats_report
from executions.stats.rows import Metrics, StatsRow
from executions.stats.window import (
    DEFAULT_RANGE,
    FINISHED,
    GROUPINGS,
    INTERVALS,
    MAX_HOURLY_RANGE,
    MAX_RANGE,
    NO_AGENT,
    NO_TOOL,
    PERCENTILE_SAMPLE,
    StatsParamError,
    StatsWindow,
    bucket_start,
    bucket_starts,
    stats_window,
)

__all__ = [
    "DEFAULT_RANGE",
    "FINISHED",
    "GROUPINGS",
    "INTERVALS",
    "MAX_HOURLY_RANGE",
    "MAX_RANGE",
    "NO_AGENT",
    "NO_TOOL",
    "PERCENTILE_SAMPLE",
    "Metrics",
    "PercentileCont",
    "StatsParamError",
    "StatsRow",
    "StatsWindow",
    "bucket_start",
    "bucket_starts",
    "execution_stats",
    "fill_series",
    "guard_decision_counts",
    "percentile_cont",
    "stats_report",
    "stats_window",
]
