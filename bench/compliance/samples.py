"""The rows the cases aim at: an execution six months old, a busy and a quiet tool/agent pair."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


def quarter_bounds(now):
    """The previous calendar quarter (what the admin's 'Last quarter' means), in UTC."""
    start_this = now.replace(
        month=3 * ((now.month - 1) // 3) + 1, day=1, hour=0, minute=0, second=0, microsecond=0
    )
    if start_this.month == 1:
        return start_this.replace(year=start_this.year - 1, month=10), start_this
    return start_this.replace(month=start_this.month - 3), start_this


@dataclass
class Samples:
    now: dt.datetime
    q_start: dt.datetime
    q_end: dt.datetime
    mid: dict  # an execution of an agent, six months old
    ev: dict  # its first audit event
    busy: tuple  # (tool id, agent id, calls) of the busiest pair last quarter
    quiet: tuple  # and of one at three quarters down the list
    tool_names: dict
    agent_names: dict
    agent_users: dict
    rare_tool: object  # the tool of the oldest call of the last 30 days


def find_samples() -> Samples:
    from django.db import connection

    from executions.models import Execution
    from registry.models import Agent, AuditEvent, Tool

    now = dt.datetime.now(dt.UTC)
    q_start, q_end = quarter_bounds(now)
    mid = (
        Execution.objects.filter(
            created_at__lt=now - dt.timedelta(days=180), tool__isnull=False, agent__isnull=False
        )
        .order_by("-created_at")
        .values("id", "request_id", "tool_id", "agent_id", "tool_name", "principal_name")
        .first()
    )
    ev = (
        AuditEvent.objects.filter(target_type="executions.execution", target_id=str(mid["id"]))
        .order_by("id")
        .values("id", "sequence", "request_id", "actor_name")
        .first()
    )
    with connection.cursor() as cur:
        cur.execute(
            "SELECT tool_id, agent_id, count(*) FROM executions_execution "
            "WHERE created_at >= %s AND created_at < %s AND agent_id IS NOT NULL AND tool_id IS NOT NULL "
            "GROUP BY 1, 2 ORDER BY 3 DESC",
            [q_start, q_end],
        )
        pairs = cur.fetchall()
    rare_tool = (
        Execution.objects.filter(created_at__gte=now - dt.timedelta(days=30), tool__isnull=False)
        .values_list("tool_id", flat=True)
        .order_by("created_at")
        .first()
    )
    return Samples(
        now=now,
        q_start=q_start,
        q_end=q_end,
        mid=mid,
        ev=ev,
        busy=pairs[0],
        quiet=pairs[len(pairs) * 3 // 4],
        tool_names=dict(Tool.objects.values_list("id", "name")),
        agent_names=dict(Agent.objects.values_list("id", "name")),
        agent_users=dict(Agent.objects.values_list("id", "user__username")),
        rare_tool=rare_tool,
    )
