"""Guard decisions counted per tool, guard and action over the caller's visible executions.

Decisions that let a call through unchanged (``allow``, ``pass``) are counted
too: how often a guard ran is part of what it did. On PostgreSQL one query
unnests ``guard_decisions`` (``jsonb_array_elements``); elsewhere the rows with
decisions are read and counted here.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from executions.models import Execution
from executions.stats.window import NO_TOOL, StatsWindow


def _window(queryset: QuerySet[Execution], window: StatsWindow, tool_id, agent_id):
    qs = queryset.filter(created_at__gte=window.start, created_at__lt=window.end)
    if tool_id is not None:
        qs = qs.filter(tool_id=tool_id)
    if agent_id is not None:
        qs = qs.filter(agent_id=agent_id)
    return qs.exclude(guard_decisions=[]).select_related(None).order_by()


def _counted_in_sql(qs) -> list[tuple]:
    inner, params = qs.values("pk").query.sql_with_params()
    table = Execution._meta.db_table
    sql = (
        "SELECT e.tool_id, MAX(e.tool_name), d->>'guard', d->>'action', COUNT(*) "  # noqa: S608
        f"FROM {table} e CROSS JOIN LATERAL jsonb_array_elements(e.guard_decisions) d "
        f"WHERE e.id IN ({inner}) GROUP BY e.tool_id, d->>'guard', d->>'action'"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _counted_here(qs) -> list[tuple]:
    counts: Counter = Counter()
    names: dict[Any, str] = {}
    for tool_id, tool_name, decisions in qs.values_list(
        "tool_id", "tool_name", "guard_decisions"
    ).iterator():
        names[tool_id] = tool_name
        for decision in decisions or []:
            counts[(tool_id, decision.get("guard"), decision.get("action"))] += 1
    return [(t, names[t], g, a, n) for (t, g, a), n in counts.items()]


def guard_decision_counts(
    queryset: QuerySet[Execution], *, window: StatsWindow, tool_id: Any = None, agent_id: Any = None
) -> list[dict[str, Any]]:
    """One row per (tool, guard) with its decisions counted by action, most first."""
    qs = _window(queryset, window, tool_id, agent_id)
    raw = _counted_in_sql(qs) if connection.vendor == "postgresql" else _counted_here(qs)
    rows: dict[tuple, dict[str, Any]] = {}
    for tool, tool_name, guard, action, count in raw:
        key = (str(tool) if tool else None, guard)
        row = rows.setdefault(
            key,
            {
                "tool_id": key[0],
                "tool_name": tool_name or NO_TOOL,
                "guard": guard,
                "decisions": 0,
                "by_action": {},
            },
        )
        row["decisions"] += count
        row["by_action"][action] = row["by_action"].get(action, 0) + count
    for row in rows.values():
        row["by_action"] = dict(sorted(row["by_action"].items()))
    return sorted(rows.values(), key=lambda r: (-r["decisions"], r["tool_name"], r["guard"] or ""))
