"""The admin's usage dashboard: totals, per-tool and per-agent tables, inline SVG charts.

Hooked into the admin site by the project's URLconf
(``admin.site.admin_view(dashboard_view)`` at ``admin/dashboard/``). Open to
staff users who are reviewers or platform admins (superusers included).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.contrib import admin
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse
from django.utils import timezone

from executions import selectors, stats
from executions.models import ExecutionStatus
from executions.svg_charts import Series, line_chart, stacked_bars
from registry import authorization

logger = logging.getLogger(__name__)

# Range choice → (span, bucket interval of the charts).
RANGES = {
    "24h": (timedelta(hours=24), "hour"),
    "7d": (timedelta(days=7), "hour"),
    "30d": (timedelta(days=30), "day"),
    "90d": (timedelta(days=90), "day"),
}
DEFAULT_RANGE = "7d"
TABLE_ROWS = 50
_LABEL_FORMAT = {"hour": "%m-%d %H:00", "day": "%Y-%m-%d", "week": "%Y-%m-%d"}

# Stacking order of the calls chart (bottom first); "other" is everything else.
STATUS_LAYERS = [
    (ExecutionStatus.SUCCEEDED, "Succeeded", "#2e7d32"),
    (ExecutionStatus.FAILED, "Failed", "#c62828"),
    (ExecutionStatus.DENIED, "Denied", "#ef6c00"),
    (ExecutionStatus.INVALID, "Invalid", "#f9a825"),
]
OTHER_LAYER = ("Other", "#78909c")


def may_view_dashboard(user) -> bool:
    return bool(
        user.is_authenticated
        and user.is_active
        and user.is_staff
        and (
            user.is_superuser
            or authorization.is_reviewer(user)
            or authorization.is_platform_admin(user)
        )
    )


def _link(view_name: str, object_id: str | None) -> str | None:
    if not object_id:
        return None
    try:
        return reverse(view_name, args=[object_id])
    except NoReverseMatch:
        return None


def _table(rows: list[stats.StatsRow], view_name: str) -> list[dict]:
    table = []
    for row in rows[:TABLE_ROWS]:
        metrics = row.metrics
        rate = metrics.success_rate
        table.append(
            {
                "name": row.name,
                "url": _link(view_name, row.group_id),
                "calls": metrics.calls,
                "succeeded": metrics.succeeded,
                "failed": metrics.failed,
                "denied": metrics.denied,
                "success_rate": None if rate is None else rate * 100,
                "denials": sorted(
                    (metrics.denials_by_reason or {}).items(), key=lambda kv: (-kv[1], kv[0])
                ),
                "p50": metrics.p50_ms,
                "p95": metrics.p95_ms,
                "cost": metrics.cost,
            }
        )
    return table


def _charts(series: list[stats.StatsRow], interval: str, range_key: str) -> dict:
    labels = [row.bucket.strftime(_LABEL_FORMAT[interval]) for row in series]
    layers = [
        Series(label, colour, [row.metrics.count(status) for row in series])
        for status, label, colour in STATUS_LAYERS
    ]
    counted = {status for status, _label, _colour in STATUS_LAYERS}
    layers.append(
        Series(
            OTHER_LAYER[0],
            OTHER_LAYER[1],
            [
                row.metrics.calls
                - sum(n for status, n in row.metrics.by_status.items() if status in counted)
                for row in series
            ],
        )
    )
    # p95 last so it is drawn on top where both lines meet (a bucket with one run).
    latency = [
        Series("p50", "#90caf9", [row.metrics.p50_ms for row in series]),
        Series("p95", "#1565c0", [row.metrics.p95_ms for row in series]),
    ]
    return {
        "calls": stacked_bars(
            title=f"Calls per {interval} by status (last {range_key})", labels=labels, series=layers
        ),
        "latency": line_chart(
            title=f"Latency per {interval}, finished runs (last {range_key})",
            labels=labels,
            series=latency,
            unit=" ms",
        ),
    }


DASHBOARD_CACHE_SECONDS = 60


def dashboard_cache_key(range_key: str) -> str:
    # v2: the cached tuple carries the guard decisions too (a v1 entry is never read).
    return f"toolhub:dashboard:v2:{range_key}"


def dashboard_view(request):
    """Usage over the chosen range (24h / 7d / 30d / 90d) of every execution."""
    if not may_view_dashboard(request.user):
        raise PermissionDenied
    range_key = request.GET.get("range", DEFAULT_RANGE)
    if range_key not in RANGES:
        range_key = DEFAULT_RANGE
    span, interval = RANGES[range_key]
    # Everyone allowed here sees every execution, so one cached copy per range
    # serves them all: re-aggregating 90 days of millions of rows takes seconds.
    cache_key = dashboard_cache_key(range_key)
    try:
        cached, cache_answers = cache.get(cache_key), True
    except Exception as exc:  # Redis down or not answering: compute, and wait on it no more
        logger.warning("dashboard cache unavailable: %s", exc.__class__.__name__)
        cached, cache_answers = None, False
    if cached is None:
        now = timezone.now()
        window = stats.stats_window(start=now - span, end=now, interval=interval)
        visible = selectors.execution_visible_to(request.user)
        totals = stats.execution_stats(visible, window=window)
        by_tool = stats.execution_stats(visible, window=window, group_by="tool")
        by_agent = stats.execution_stats(visible, window=window, group_by="agent")
        series = stats.fill_series(
            stats.execution_stats(visible, window=window, interval=interval, with_reasons=False),
            window,
            interval,
        )
        guards = stats.guard_decision_counts(visible, window=window)
        cached = (now, window, totals, by_tool, by_agent, series, guards)
        if cache_answers:
            try:
                cache.set(cache_key, cached, DASHBOARD_CACHE_SECONDS)
            except Exception as exc:
                logger.warning("dashboard not cached: %s", exc.__class__.__name__)
    now, window, totals, by_tool, by_agent, series, guards = cached
    total = totals[0].metrics if totals else stats.Metrics(denials_by_reason={})
    rate = total.success_rate
    context = {
        **admin.site.each_context(request),
        "title": "Usage dashboard",
        "ranges": list(RANGES),
        "range_key": range_key,
        "window": window,
        "total": total,
        "total_rate": None if rate is None else rate * 100,
        "total_denials": sorted(
            (total.denials_by_reason or {}).items(), key=lambda kv: (-kv[1], kv[0])
        ),
        "tables": [
            {
                "title": "Per tool",
                "id": "dashboard-tools",
                "first_column": "Tool",
                "rows": _table(by_tool, "admin:registry_tool_change"),
                "more": max(0, len(by_tool) - TABLE_ROWS),
            },
            {
                "title": "Per agent",
                "id": "dashboard-agents",
                "first_column": "Agent",
                "rows": _table(by_agent, "admin:registry_agent_change"),
                "more": max(0, len(by_agent) - TABLE_ROWS),
            },
        ],
        "charts": _charts(series, interval, range_key),
        "guards": [
            {**row, "by_action": sorted(row["by_action"].items())} for row in guards[:TABLE_ROWS]
        ],
    }
    return TemplateResponse(request, "admin/toolhub_dashboard.html", context)


# Included at /admin/dashboard/ by the project's URLs, behind the admin's login.
urlpatterns = [path("", admin.site.admin_view(dashboard_view), name="toolhub-dashboard")]
