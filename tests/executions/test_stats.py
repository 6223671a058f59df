"""Usage statistics: exact numbers on seeded executions, visibility, 400s, and the dashboard."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client

from executions import stats
from executions.models import Execution
from executions.svg_charts import Series, line_chart, stacked_bars
from registry.services import agents as agent_services
from tests.conftest import token_client
from tests.factories import ToolFactory, make_user
from toolhub.rows import RowWriter

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.metrics_urls")]

DAY1 = datetime(2025, 3, 10, tzinfo=UTC)  # a Monday
DAY2 = DAY1 + timedelta(days=1)
END = DAY1 + timedelta(days=2)
WINDOW = {"from": "2025-03-10T00:00:00Z", "to": "2025-03-12T00:00:00Z"}


def expected_percentile(values, fraction):
    """Linear interpolation between closest ranks, as PostgreSQL's percentile_cont."""
    ordered = sorted(values)
    rank = fraction * (len(ordered) - 1)
    below, above = math.floor(rank), math.ceil(rank)
    return ordered[below] + (ordered[above] - ordered[below]) * (rank - below)


def seed(rows):
    """Insert the rows as they ended, at their time in the past.

    ``toolhub.rows`` keeps a preset ``created_at`` (``auto_now_add`` would override
    it on a plain save), and a finished row needs no later UPDATE, which the
    database trigger would refuse.
    """
    writer = RowWriter(Execution)
    return [
        writer.insert(
            Execution(**{k: v for k, v in row.items() if k != "at"}, created_at=row["at"])
        )
        for row in rows
    ]


def run(tool, agent, principal, status, at, ms=None, reason="", cost=None):
    return {
        "tool": tool,
        "tool_name": tool.name if tool else "",
        "tool_type": tool.type if tool else "",
        "agent": agent,
        "principal": principal,
        "principal_name": principal.username,
        "status": status,
        "reason_code": reason,
        "execution_time_ms": ms,
        "cost": cost,
        "at": at,
    }


@pytest.fixture
def world(owner):
    person = make_user("person-paul")
    agent = agent_services.agent_create(actor=None, name="agent-x", owner=owner)
    tool_a = ToolFactory(name="alpha_tool", type="http")
    tool_b = ToolFactory(name="beta_tool", type="database")
    bot = agent.user
    h = timedelta(hours=1)
    rows = [
        # alpha by agent-x: 4 succeeded, 1 failed, 3 denied, 1 queued.
        run(tool_a, agent, bot, "succeeded", DAY1 + 1 * h, 10, cost=Decimal("0.5")),
        run(tool_a, agent, bot, "succeeded", DAY1 + 2 * h, 20, cost=Decimal("0.5")),
        run(tool_a, agent, bot, "succeeded", DAY1 + 3 * h, 30, cost=Decimal("0.5")),
        run(tool_a, agent, bot, "succeeded", DAY2 + 4 * h, 40, cost=Decimal("0.5")),
        run(tool_a, agent, bot, "failed", DAY2 + 5 * h, 100),
        run(tool_a, agent, bot, "denied", DAY1 + 6 * h, reason="rate_limited"),
        run(tool_a, agent, bot, "denied", DAY2 + 6 * h, reason="rate_limited"),
        run(tool_a, agent, bot, "denied", DAY2 + 7 * h, reason="permission_denied"),
        run(tool_a, agent, bot, "queued", DAY2 + 8 * h),
        # beta: by a person (no agent) and once by agent-x.
        run(tool_b, None, person, "succeeded", DAY1 + 9 * h, 5),
        run(tool_b, None, person, "succeeded", DAY2 + 9 * h, 15),
        run(tool_b, None, person, "invalid", DAY2 + 10 * h, reason="invalid_arguments"),
        run(tool_b, agent, bot, "succeeded", DAY2 + 11 * h, 50),
        # An unknown tool, refused.
        run(None, None, person, "denied", DAY1 + 12 * h, reason="tool_not_found"),
        # Outside [from, to): never counted.
        run(tool_a, agent, bot, "succeeded", DAY1 - timedelta(seconds=1), 9999),
        run(tool_a, agent, bot, "succeeded", END, 9999),
    ]
    seed(rows)
    return {
        "owner": owner,
        "person": person,
        "agent": agent,
        "a": tool_a,
        "b": tool_b,
        "alpha_ms": [10, 20, 30, 40, 100],
        "beta_ms": [5, 15, 50],
        "agent_ms": [10, 20, 30, 40, 100, 50],
    }


def by_name(payload):
    return {group["name"]: group for group in payload["groups"]}


def test_totals_and_per_tool_numbers_are_exact(world, reviewer_client):
    response = reviewer_client.get("/api/v1/stats", WINDOW)
    assert response.status_code == 200, response.content
    data = response.json()
    total = data["totals"]
    assert total["calls"] == 14
    assert (total["succeeded"], total["failed"], total["denied"]) == (7, 1, 4)
    assert total["by_status"]["invalid"] == 1 and total["by_status"]["queued"] == 1
    assert total["success_rate"] == pytest.approx(7 / 8, abs=1e-6)
    assert total["denials_by_reason"] == {
        "rate_limited": 2,
        "permission_denied": 1,
        "tool_not_found": 1,
    }
    everything = world["alpha_ms"] + world["beta_ms"]
    assert total["p50_ms"] == pytest.approx(expected_percentile(everything, 0.5))
    assert total["p95_ms"] == pytest.approx(expected_percentile(everything, 0.95))
    assert Decimal(total["cost"]) == Decimal("2")
    assert total["cost"] == "2.000000"  # a fixed string with the column's 6 decimals

    groups = by_name(data)
    alpha = groups["alpha_tool"]
    assert alpha["id"] == str(world["a"].pk)
    assert (alpha["calls"], alpha["succeeded"], alpha["failed"], alpha["denied"]) == (9, 4, 1, 3)
    assert alpha["success_rate"] == pytest.approx(0.8)
    assert alpha["denials_by_reason"] == {"rate_limited": 2, "permission_denied": 1}
    assert alpha["p50_ms"] == pytest.approx(30.0)
    assert alpha["p95_ms"] == pytest.approx(88.0)  # 40 + 0.8 * (100 - 40)
    assert Decimal(alpha["cost"]) == Decimal("2")
    beta = groups["beta_tool"]
    assert (beta["calls"], beta["succeeded"], beta["failed"]) == (4, 3, 0)
    assert beta["success_rate"] == 1.0 and beta["denials_by_reason"] == {}
    assert beta["p50_ms"] == pytest.approx(15.0)
    assert beta["p95_ms"] == pytest.approx(expected_percentile(world["beta_ms"], 0.95))
    unknown = groups[stats.NO_TOOL]
    assert unknown["id"] is None and unknown["denials_by_reason"] == {"tool_not_found": 1}
    assert unknown["success_rate"] is None and unknown["p50_ms"] is None
    assert data["groups"][0]["name"] == "alpha_tool"  # most calls first


def test_group_by_agent(world, reviewer_client):
    data = reviewer_client.get("/api/v1/stats", {**WINDOW, "group_by": "agent"}).json()
    groups = by_name(data)
    assert set(groups) == {"agent-x", stats.NO_AGENT}
    agent = groups["agent-x"]
    assert agent["id"] == str(world["agent"].pk)
    assert (agent["calls"], agent["succeeded"], agent["failed"], agent["denied"]) == (10, 5, 1, 3)
    assert agent["p50_ms"] == pytest.approx(expected_percentile(world["agent_ms"], 0.5))
    assert agent["p95_ms"] == pytest.approx(expected_percentile(world["agent_ms"], 0.95))
    people = groups[stats.NO_AGENT]
    assert people["calls"] == 4 and people["denials_by_reason"] == {"tool_not_found": 1}


def test_daily_series(world, reviewer_client):
    data = reviewer_client.get("/api/v1/stats", {**WINDOW, "interval": "day"}).json()
    assert [b["bucket"] for b in data["series"]] == [DAY1.isoformat(), DAY2.isoformat()]
    day1, day2 = data["series"]
    assert (day1["calls"], day2["calls"]) == (6, 8)
    assert day1["p50_ms"] == pytest.approx(expected_percentile([10, 20, 30, 5], 0.5))
    assert day2["p95_ms"] == pytest.approx(expected_percentile([40, 100, 15, 50], 0.95))
    alpha = by_name(data)["alpha_tool"]
    assert [(b["bucket"], b["calls"]) for b in alpha["series"]] == [
        (DAY1.isoformat(), 4),
        (DAY2.isoformat(), 5),
    ]
    assert alpha["series"][1]["denials_by_reason"] == {
        "rate_limited": 1,
        "permission_denied": 1,
    }


def test_hourly_series_is_gap_free_and_weekly_starts_monday(world, reviewer_client):
    hourly = reviewer_client.get("/api/v1/stats", {**WINDOW, "interval": "hour"}).json()
    assert len(hourly["series"]) == 48
    assert sum(b["calls"] for b in hourly["series"]) == 14
    weekly = reviewer_client.get(
        "/api/v1/stats",
        {"from": "2025-03-12T00:00:00Z", "to": "2025-03-13T00:00:00Z", "interval": "week"},
    ).json()
    assert [b["bucket"] for b in weekly["series"]] == [DAY1.isoformat()]


def test_filters(world, reviewer_client):
    only_beta = reviewer_client.get(
        "/api/v1/stats", {**WINDOW, "tool_id": str(world["b"].pk)}
    ).json()
    assert only_beta["totals"]["calls"] == 4 and list(by_name(only_beta)) == ["beta_tool"]
    assert only_beta["filters"]["tool_id"] == str(world["b"].pk)
    agent_on_beta = reviewer_client.get(
        "/api/v1/stats",
        {**WINDOW, "tool_id": str(world["b"].pk), "agent_id": str(world["agent"].pk)},
    ).json()
    assert agent_on_beta["totals"]["calls"] == 1
    assert agent_on_beta["totals"]["p50_ms"] == pytest.approx(50.0)


def test_python_percentiles_match_sql(world):
    """The SQLite fallback (percentiles in Python) gives PostgreSQL's numbers."""
    if connection.vendor != "postgresql":
        pytest.skip("percentile_cont is PostgreSQL's; on SQLite every test uses the fallback")
    window = stats.stats_window(start=DAY1, end=END)
    qs = Execution.objects.all()
    for group_by in (None, "tool", "agent"):
        for interval in (None, "day"):
            sql = stats.execution_stats(
                qs, window=window, group_by=group_by, interval=interval, sql_percentiles=True
            )
            python = stats.execution_stats(
                qs, window=window, group_by=group_by, interval=interval, sql_percentiles=False
            )
            assert [(r.group_id, r.bucket) for r in sql] == [(r.group_id, r.bucket) for r in python]
            for a, b in zip(sql, python, strict=True):
                assert a.metrics.calls == b.metrics.calls
                assert a.metrics.p50_ms == pytest.approx(b.metrics.p50_ms)
                assert a.metrics.p95_ms == pytest.approx(b.metrics.p95_ms)


def test_percentile_definition():
    assert stats.percentile_cont([], 0.5) is None
    assert stats.percentile_cont([7], 0.95) == 7
    assert stats.percentile_cont([1, 2, 3, 4], 0.5) == 2.5
    assert stats.percentile_cont([10, 20, 30, 40, 100], 0.95) == pytest.approx(88.0)


def test_callers_see_only_their_own(world):
    # A person sees the calls they made themselves.
    paul = token_client(world["person"]).get("/api/v1/stats", WINDOW).json()
    assert paul["totals"]["calls"] == 4
    assert set(by_name(paul)) == {"beta_tool", stats.NO_TOOL}
    # An owner sees their agents' calls; the agent sees its own.
    for user in (world["owner"], world["agent"].user):
        data = token_client(user).get("/api/v1/stats", WINDOW).json()
        assert data["totals"]["calls"] == 10
        assert by_name(data)["beta_tool"]["calls"] == 1
    # Filtering on someone else's tool use reveals nothing.
    outsider = make_user("outsider-otto")
    nothing = token_client(outsider).get("/api/v1/stats", WINDOW).json()
    assert nothing["totals"]["calls"] == 0 and nothing["groups"] == []
    assert nothing["totals"]["success_rate"] is None


def test_platform_admin_sees_everything(world, staff_client):
    assert staff_client.get("/api/v1/stats", WINDOW).json()["totals"]["calls"] == 14


def test_anonymous_is_refused(world, anon_client):
    assert anon_client.get("/api/v1/stats", WINDOW).status_code in (401, 403)


def test_default_range_is_the_last_seven_days(world, reviewer_client):
    now = datetime.now(UTC)
    tool = world["a"]
    seed(
        [
            run(tool, None, world["person"], "succeeded", now - timedelta(days=1), 12),
            run(tool, None, world["person"], "failed", now - timedelta(days=6, hours=23), 13),
            run(tool, None, world["person"], "succeeded", now - timedelta(days=7, hours=1), 14),
        ]
    )
    data = reviewer_client.get("/api/v1/stats").json()
    assert data["totals"]["calls"] == 2 and data["group_by"] == "tool"
    span = datetime.fromisoformat(data["to"]) - datetime.fromisoformat(data["from"])
    assert span == timedelta(days=7)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "yesterday"}, "from"),
        ({"to": "2025-13-45"}, "to"),
        ({"from": "2025-03-12T00:00:00Z", "to": "2025-03-10T00:00:00Z"}, "to"),
        ({"from": "2024-01-01T00:00:00Z", "to": "2025-03-10T00:00:00Z"}, "from"),
        ({"group_by": "role"}, "group_by"),
        ({"interval": "minute"}, "interval"),
        ({"from": "2025-01-01", "to": "2025-03-01", "interval": "hour"}, "interval"),
        ({"tool_id": "not-a-uuid"}, "tool_id"),
        ({"agent_id": "42"}, "agent_id"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(reviewer_client, params, field):
    response = reviewer_client.get("/api/v1/stats", params)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert [d["field"] for d in error["details"]] == [field]


def test_range_of_exactly_366_days_and_date_only_bounds(reviewer_client, world):
    response = reviewer_client.get("/api/v1/stats", {"from": "2024-03-10", "to": "2025-03-11"})
    assert response.status_code == 200
    assert response.json()["from"] == "2024-03-10T00:00:00+00:00"
    # Day 1 plus the call one second before it; day 2 is excluded (to is exclusive).
    assert response.json()["totals"]["calls"] == 7


# The admin dashboard.


def fresh_calls(world):
    now = datetime.now(UTC)
    seed(
        [
            run(
                world["a"],
                world["agent"],
                world["agent"].user,
                "succeeded",
                now - 2 * timedelta(hours=1),
                42,
            ),
            run(
                world["a"],
                world["agent"],
                world["agent"].user,
                "failed",
                now - timedelta(hours=3),
                420,
            ),
            run(
                world["a"],
                world["agent"],
                world["agent"].user,
                "denied",
                now - timedelta(hours=4),
                reason="rate_limited",
            ),
        ]
    )


def test_dashboard_renders_for_a_reviewer(world, reviewer_user):
    fresh_calls(world)
    client = Client()
    client.force_login(reviewer_user)
    for range_key in ("24h", "7d", "30d", "90d", "bogus"):
        response = client.get("/admin/dashboard/", {"range": range_key})
        assert response.status_code == 200
    page = client.get("/admin/dashboard/", {"range": "24h"}).content.decode()
    assert page.count('<svg class="toolhub-chart"') == 2 and "Calls per hour by status" in page
    assert "<rect" in page and "<path" in page  # bars and the p95 line are drawn
    assert 'id="dashboard-tools"' in page and 'id="dashboard-agents"' in page
    assert "alpha_tool" in page and "agent-x" in page and "rate_limited: 1" in page
    assert "50.0%" in page  # 1 succeeded / (1 succeeded + 1 failed)
    # Nothing is fetched from elsewhere: every src/href is local (the admin's own
    # inline icons carry an xmlns namespace name, which is not a fetch).
    links = re.findall(r"""(?:src|href)\s*=\s*["']?([^"' >]+)""", page)
    assert links and not [url for url in links if re.match(r"^(https?:)?//", url)]
    charts = re.findall(r'<svg class="toolhub-chart".*?</svg>', page, flags=re.S)
    assert len(charts) == 2 and not any("http" in chart or "<script" in chart for chart in charts)


def test_dashboard_for_superuser_and_platform_admin(world, superuser, staff_user):
    for user in (superuser, staff_user):
        client = Client()
        client.force_login(user)
        assert client.get("/admin/dashboard/").status_code == 200


def test_dashboard_refuses_plain_staff_and_non_staff(world):
    plain_staff = make_user("sam-staff", is_staff=True)
    client = Client()
    client.force_login(plain_staff)
    assert client.get("/admin/dashboard/").status_code == 403
    client.force_login(world["person"])
    response = client.get("/admin/dashboard/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_svg_helpers_escape_text():
    hostile = '<script>alert("x")</script>'
    svg = stacked_bars(
        title=hostile, labels=[hostile, "b"], series=[Series(hostile, "#123456", [1, 2])]
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    line = line_chart(title="t", labels=["a", "b"], series=[Series("p95", "#123", [None, 3.5])])
    assert "<path" in line and "3.5" in line
    empty = line_chart(title="t", labels=["a"], series=[Series("p95", "#123", [None])])
    assert "No data in this range" in empty
    with pytest.raises(ValueError):
        stacked_bars(title="t", labels=["a"], series=[Series("x", 'red" onload="x', [1])])
