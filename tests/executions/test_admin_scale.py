"""The Execution and AuditEvent changelists for big tables, their filters, exports and links.

No ``COUNT(*)`` and no ``DISTINCT`` over the tables (paginator, filters, facets,
date hierarchy), a query count that does not grow with the rows, filters that
hit the indexes, and exports of exactly the filtered changelist.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.contrib import admin
from django.db import connection
from django.http import StreamingHttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from executions.models import Approval, Execution
from registry.models import AuditEvent
from registry.services import agents as agent_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from registry.services.audit import audit_record
from tests.factories import make_user

pytestmark = pytest.mark.django_db

EXECUTIONS = reverse("admin:executions_execution_changelist")
AUDIT = reverse("admin:registry_auditevent_changelist")
BIG_TABLES = {"executions_execution": EXECUTIONS, "registry_auditevent": AUDIT}


def at(moment: datetime):
    return mock.patch("django.utils.timezone.now", return_value=moment)


def quarter_start(moment: datetime) -> datetime:
    return datetime(moment.year, 3 * ((moment.month - 1) // 3) + 1, 1, tzinfo=UTC)


@pytest.fixture
def client(reviewer_user) -> Client:
    client = Client()
    client.force_login(reviewer_user)
    return client


@pytest.fixture
def world(owner):
    role = role_services.role_create(actor=None, name="callers")
    agents = [
        agent_services.agent_create(actor=None, name=f"agent-{n}", owner=owner) for n in ("a", "b")
    ]
    tools = [
        tool_services.tool_create(actor=None, name=f"scale_tool_{n}", type="http") for n in (1, 2)
    ]
    return {"owner": owner, "role": role, "agents": agents, "tools": tools}


def make_executions(world, count: int, *, start: datetime | None = None) -> list[Execution]:
    start = start or timezone.now() - timedelta(hours=count)
    made = []
    for i in range(count):
        tool, agent = world["tools"][i % 2], world["agents"][(i // 2) % 2]
        with at(start + timedelta(hours=i)):
            made.append(
                Execution.objects.create(
                    tool=tool,
                    tool_name=tool.name,
                    tool_type="http",
                    agent=agent,
                    principal=agent.user,
                    principal_name=agent.user.username,
                    role=world["role"] if i % 3 == 0 else None,
                    status="succeeded" if i % 4 else "failed",
                    request_id=f"req-{len(made)}-{i}",
                )
            )
    for execution in made:
        audit_record(
            actor=None,
            action=f"execution.{execution.status}",
            target_type="executions.execution",
            target_id=str(execution.pk),
            target_repr=execution.tool_name,
        )
    return made


def big_table_queries(queries) -> list[str]:
    return [q["sql"] for q in queries if any(t in q["sql"] for t in BIG_TABLES)]


def assert_cheap(queries):
    for sql in big_table_queries(queries):
        upper = sql.upper()
        assert "COUNT(" not in upper, sql
        assert "DISTINCT" not in upper, sql


def changelist_urls(world) -> list[str]:
    tool, agent = world["tools"][0], world["agents"][1]
    return [
        EXECUTIONS,
        EXECUTIONS + "?p=2",
        EXECUTIONS + "?all=",
        EXECUTIONS + "?_facets=1",
        EXECUTIONS + f"?tool={tool.pk}",
        EXECUTIONS + f"?tool={tool.name}&status__exact=succeeded",
        EXECUTIONS + f"?agent={agent.name}&role=callers&principal=nobody",
        EXECUTIONS + "?created=7d",
        EXECUTIONS + "?created=last_quarter",
        EXECUTIONS + "?created_from=2020-01-01&created_to=2030-12-31",
        EXECUTIONS + "?q=req-3-3",
        AUDIT,
        AUDIT + "?p=2",
        AUDIT + "?_facets=1",
        AUDIT + "?action=execution.",
        AUDIT + "?action=execution.failed&actor=system",
        AUDIT + "?target_type=executions.execution&occurred=30d",
        AUDIT + "?occurred=this_quarter",
        AUDIT + "?q=req-1-1",
        AUDIT + "?q=12345",
    ]


def test_changelists_never_count_or_scan_distinct_values(client, world):
    make_executions(world, 120)
    for url in changelist_urls(world):
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200, url
        assert_cheap(queries.captured_queries)
        # One query reads the page (and learns whether a next page exists).
        assert len(big_table_queries(queries.captured_queries)) <= 2, (url, queries)


def test_query_count_does_not_grow_with_the_rows(client, world):
    make_executions(world, 5)
    small = {}
    for url in changelist_urls(world):
        with CaptureQueriesContext(connection) as queries:
            client.get(url)
        small[url] = len(queries)
    make_executions(world, 150)
    for url in changelist_urls(world):
        with CaptureQueriesContext(connection) as queries:
            client.get(url)
        assert len(queries) <= small[url] + 1, (url, small[url], len(queries))
        assert len(queries) <= 15, url


def test_big_table_admins_are_set_up_for_scale():
    for model in (Execution, AuditEvent, Approval):
        model_admin = admin.site._registry[model]
        assert model_admin.date_hierarchy is None
        assert model_admin.show_full_result_count is False
        assert model_admin.show_facets is admin.ShowFacets.NEVER
        assert model_admin.list_max_show_all == 0
    for model in (Execution, AuditEvent):
        for item in admin.site._registry[model].list_filter:
            # Field filters on FKs list every related row; on free text they run DISTINCT.
            assert not isinstance(item, str) or item == "status", item


def test_pages_are_read_without_counting(client, world):
    make_executions(world, 120)
    first = client.get(EXECUTIONS)
    cl = first.context["cl"]
    assert len(cl.result_list) == 50 and cl.multi_page
    assert b"more follow (not counted)" in first.content
    assert b"?p=2" in first.content
    third = client.get(EXECUTIONS + "?p=3").context["cl"]
    assert len(third.result_list) == 20
    assert client.get(EXECUTIONS + "?all=").context["cl"].result_list.__len__() == 50
    assert client.get(EXECUTIONS + "?p=9").status_code == 302  # past the end


def test_a_filtered_list_says_the_same_above_and_below_the_rows(client, world):
    make_executions(world, 120)
    page = client.get(EXECUTIONS + "?status=succeeded").content.decode()
    # Above (the search bar) and below (the paginator): a lower bound, never a total.
    assert "More than 50 results (not counted)" in page
    assert "Page 1 of more than 50 results; more follow (not counted)" in page
    assert "Show all" not in page and "51 results" not in page
    unfiltered = client.get(EXECUTIONS).content.decode()
    assert 'id="result-count"' not in unfiltered  # nothing searched or filtered: no count line


def shown_ids(response) -> set[str]:
    return {str(obj.pk) for obj in response.context["cl"].result_list}


def test_execution_filters_select_the_right_rows(client, world):
    now = timezone.now()
    this_quarter = quarter_start(now)
    last_quarter = quarter_start(this_quarter - timedelta(days=1))
    made = make_executions(world, 8, start=now - timedelta(hours=10))
    old = make_executions(world, 3, start=this_quarter - timedelta(days=2))
    older = make_executions(world, 2, start=last_quarter - timedelta(days=2))
    everything = made + old + older
    tool, agent = world["tools"][0], world["agents"][1]

    def expect(query, predicate):
        response = client.get(EXECUTIONS + "?" + query)
        assert response.status_code == 200, query
        assert shown_ids(response) == {str(e.pk) for e in everything if predicate(e)}, query

    expect(f"tool={tool.pk}", lambda e: e.tool_id == tool.pk)
    expect(f"tool={tool.name}", lambda e: e.tool_id == tool.pk)
    expect("tool=no_such_tool", lambda e: False)
    expect(f"agent={agent.name}", lambda e: e.agent_id == agent.pk)
    expect(f"agent={agent.pk}", lambda e: e.agent_id == agent.pk)
    expect("role=callers", lambda e: e.role_id == world["role"].pk)
    expect(f"role={world['role'].pk}", lambda e: e.role_id == world["role"].pk)
    expect(f"principal={agent.user.username}", lambda e: e.principal_id == agent.user.pk)
    expect("status__exact=failed", lambda e: e.status == "failed")
    expect("created=24h", lambda e: e.created_at >= now - timedelta(hours=24))
    expect("created=this_quarter", lambda e: e.created_at >= this_quarter)
    expect("created=last_quarter", lambda e: last_quarter <= e.created_at < this_quarter)
    day = (this_quarter - timedelta(days=2)).date().isoformat()
    expect(
        f"created_from={day}&created_to={day}",
        lambda e: e.created_at.date().isoformat() == day,
    )
    expect(f"q={made[2].pk}", lambda e: e.pk == made[2].pk)
    expect(f"q={made[3].request_id}", lambda e: e.request_id == made[3].request_id)
    expect("q=req", lambda e: False)  # exact matches only
    assert client.get(EXECUTIONS + "?created_from=2025-13-01").status_code == 302  # ?e=1


def test_audit_filters_select_the_right_rows(client, world):
    make_executions(world, 6)
    events = list(AuditEvent.objects.all())

    def expect(query, predicate):
        response = client.get(AUDIT + "?" + query)
        assert response.status_code == 200, query
        assert shown_ids(response) == {str(e.pk) for e in events if predicate(e)}, query

    expect("action=execution.", lambda e: e.action.startswith("execution."))
    expect("action=execution.failed", lambda e: e.action == "execution.failed")
    expect("action=tool.", lambda e: e.action.startswith("tool."))
    expect("actor=system", lambda e: e.actor_name == "system")
    expect("target_type=registry.tool", lambda e: e.target_type == "registry.tool")
    target = events[-1]
    expect(
        f"target_type={target.target_type}&target_id={target.target_id}",
        lambda e: (e.target_type, e.target_id) == (target.target_type, target.target_id),
    )
    expect(f"q={target.target_id}", lambda e: e.target_id == target.target_id)
    expect(f"q={target.pk}", lambda e: e.pk == target.pk)
    expect("occurred=24h", lambda e: True)
    expect("occurred_from=2001-01-01&occurred_to=2001-12-31", lambda e: False)


def exported(response) -> list[dict]:
    assert isinstance(response, StreamingHttpResponse)
    text = b"".join(response.streaming_content).decode()
    if response["Content-Type"].startswith("text/csv"):
        return list(csv.DictReader(io.StringIO(text)))
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_links_export_exactly_the_filtered_changelist(client, world, fmt):
    make_executions(world, 70)
    tool = world["tools"][1]
    for changelist, query in (
        (EXECUTIONS, f"?tool={tool.name}&status__exact=succeeded&o=1"),
        (EXECUTIONS, ""),  # 70 rows: more than one page, all exported
        (AUDIT, "?action=execution.failed"),
        (AUDIT, f"?q={Execution.objects.first().pk}"),
    ):
        page = client.get(changelist + query)
        model = "executions_execution" if changelist == EXECUTIONS else "registry_auditevent"
        links = re.findall(rf'href="([^"]*/export/{fmt}/[^"]*)"', page.content.decode())
        assert len(links) == 1
        link = html.unescape(links[0])
        assert link.startswith(reverse(f"admin:{model}_export", args=[fmt]))
        assert sorted(link.split("?", 1)[1].split("&")) == sorted(query[1:].split("&")), link
        expected = [str(obj.pk) for obj in page.context["cl"].queryset]
        rows = exported(client.get(link))
        assert [str(row["id"]) for row in rows] == expected, (changelist, query)
    assert len(expected) >= 1
    assert client.get(reverse("admin:executions_execution_export", args=["xml"])).status_code == 404


def test_export_actions_export_the_selected_rows(client, world):
    made = make_executions(world, 10)
    chosen = [str(made[1].pk), str(made[7].pk)]
    response = client.post(
        EXECUTIONS,
        {"action": "export_selected_jsonl", "_selected_action": chosen, "index": 0},
    )
    assert sorted(row["id"] for row in exported(response)) == sorted(chosen)
    events = list(AuditEvent.objects.order_by("id")[:3])
    response = client.post(
        AUDIT,
        {"action": "export_selected_csv", "_selected_action": [e.pk for e in events], "index": 0},
    )
    assert sorted(int(row["id"]) for row in exported(response)) == [e.pk for e in events]
    everything = client.post(
        EXECUTIONS + f"?tool={world['tools'][0].name}",
        {
            "action": "export_selected_csv",
            "_selected_action": chosen[:1],
            "select_across": 1,
            "index": 0,
        },
    )
    assert {row["id"] for row in exported(everything)} == {
        str(e.pk) for e in made if e.tool_id == world["tools"][0].pk
    }


def test_export_requires_view_permission(world, db):
    make_executions(world, 2)
    nobody = make_user("staff-nobody", is_staff=True)
    client = Client()
    client.force_login(nobody)
    assert client.get(reverse("admin:executions_execution_export", args=["csv"])).status_code == 403
    assert client.get(reverse("admin:registry_auditevent_export", args=["csv"])).status_code == 403


def test_detail_pages_link_executions_audit_tools_agents_and_approvals(client, world):
    execution = make_executions(world, 1)[0]
    with at(timezone.now()):
        Approval.objects.create(
            execution=execution,
            input_hash="h",
            expires_at=timezone.now() + timedelta(hours=1),
            status="approved",
            decided_by_name="ann",
        )
    page = client.get(reverse("admin:executions_execution_change", args=[execution.pk]))
    html = page.content.decode()
    approval = Approval.objects.get()
    event = AuditEvent.objects.get(target_id=str(execution.pk))
    assert page.status_code == 200 and 'name="_save"' not in html
    assert reverse("admin:registry_tool_change", args=[execution.tool_id]) in html
    assert reverse("admin:registry_agent_change", args=[execution.agent_id]) in html
    assert reverse("admin:executions_approval_change", args=[approval.pk]) in html
    assert reverse("admin:registry_auditevent_change", args=[event.pk]) in html
    assert (
        f"{AUDIT}?target_type=executions.execution&amp;target_id={execution.pk}" in html
        and "Audit events of this execution" in html
    )
    # Back from the audit event, the approval, the tool and the agent.
    event_page = client.get(reverse("admin:registry_auditevent_change", args=[event.pk]))
    event_html = event_page.content.decode()
    assert reverse("admin:executions_execution_change", args=[execution.pk]) in event_html
    for label in ("sequence", "hash", "prev_hash"):
        assert f"field-{label}" in event_html
    approval_page = client.get(reverse("admin:executions_approval_change", args=[approval.pk]))
    assert (
        reverse("admin:executions_execution_change", args=[execution.pk])
        in approval_page.content.decode()
    )
    tool_page = client.get(reverse("admin:registry_tool_change", args=[execution.tool_id]))
    assert f"{EXECUTIONS}?tool={execution.tool_id}" in tool_page.content.decode()
    agent_page = client.get(reverse("admin:registry_agent_change", args=[execution.agent_id]))
    assert f"{EXECUTIONS}?agent={execution.agent_id}" in agent_page.content.decode()
