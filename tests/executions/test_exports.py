"""Streamed exports of executions and audit events: exactly the filtered rows, no secrets.

The API (``/api/v1/executions/export``, ``/api/v1/audit/export``) and the
admin ("Export CSV" / "Export JSON Lines" of the filtered changelist, and the
export actions for selected rows) write through the same streaming writers.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.http import StreamingHttpResponse
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from executions.api.serializers import ExecutionSerializer
from executions.exports import EXECUTION_COLUMNS
from executions.models import Execution
from registry import exports
from registry.models import AuditEvent
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from registry.services.audit import audit_record
from tests.conftest import token_client
from tests.factories import make_user

CANARY = "canary-export-secret-5d1c"
PER_CALL = "per-call-export-secret-8e2f"


def body_of(response) -> str:
    assert isinstance(response, StreamingHttpResponse), type(response)
    return b"".join(response.streaming_content).decode()


def csv_rows(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(body_of(response))))


def jsonl_rows(response) -> list[dict]:
    return [json.loads(line) for line in body_of(response).splitlines() if line]


def rows_of(response, fmt: str) -> list[dict]:
    return csv_rows(response) if fmt == "csv" else jsonl_rows(response)


def record(*, at: datetime, **fields) -> Execution:
    """An execution row created at ``at`` (created_at is auto_now_add)."""
    with mock.patch("django.utils.timezone.now", return_value=at):
        return Execution.objects.create(**fields)


# A small world of execution rows over two tools, two agents, two roles and three months.


@pytest.fixture
def rows(owner):
    role_a = role_services.role_create(actor=None, name="role-a")
    role_b = role_services.role_create(actor=None, name="role-b")
    agent_x = agent_services.agent_create(actor=None, name="agent-x", owner=owner)
    agent_y = agent_services.agent_create(actor=None, name="agent-y", owner=owner)
    tool_1 = tool_services.tool_create(actor=None, name="tool_one", type="http")
    tool_2 = tool_services.tool_create(actor=None, name="tool_two", type="http")
    start = datetime(2025, 1, 10, 12, tzinfo=UTC)
    statuses = ["succeeded", "failed", "denied", "succeeded", "queued"]
    made = []
    for i in range(30):
        tool = tool_1 if i % 2 == 0 else tool_2
        agent = agent_x if i % 3 == 0 else agent_y
        made.append(
            record(
                at=start + timedelta(days=3 * i),  # 2025-01-10 … 2025-04-06
                tool=tool,
                tool_name=tool.name,
                tool_type="http",
                agent=agent,
                principal=agent.user,
                principal_name=agent.user.username,
                role=role_a if i % 4 == 0 else role_b,
                status=statuses[i % len(statuses)],
                input_data={"i": i},
                request_id=f"req-{i:03d}",
                sealed_secrets="sealed-never-exported" if i == 0 else "",
            )
        )
    return {
        "executions": made,
        "tools": (tool_1, tool_2),
        "agents": (agent_x, agent_y),
        "roles": (role_a, role_b),
        "owner": owner,
    }


def ids_where(rows, predicate) -> set[str]:
    return {str(e.pk) for e in rows["executions"] if predicate(e)}


FILTER_CASES = [
    ("", lambda rows: lambda e: True),
    ("tool_id={tool_1}", lambda rows: lambda e: e.tool_id == rows["tools"][0].pk),
    ("agent_id={agent_y}", lambda rows: lambda e: e.agent_id == rows["agents"][1].pk),
    ("role=role-a", lambda rows: lambda e: e.role_id == rows["roles"][0].pk),
    ("status=failed,denied", lambda rows: lambda e: e.status in {"failed", "denied"}),
    (
        # Q1 2025, the quarter's report: [2025-01-01, 2025-04-01)
        "created_after=2025-01-01T00:00:00Z&created_before=2025-04-01T00:00:00Z&tool_id={tool_2}",
        lambda rows: (
            lambda e: (
                datetime(2025, 1, 1, tzinfo=UTC) <= e.created_at < datetime(2025, 4, 1, tzinfo=UTC)
                and e.tool_id == rows["tools"][1].pk
            )
        ),
    ),
]


def fill(query: str, rows) -> str:
    return query.format(
        tool_1=rows["tools"][0].pk, tool_2=rows["tools"][1].pk, agent_y=rows["agents"][1].pk
    )


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize(("query", "expected"), FILTER_CASES, ids=[q for q, _ in FILTER_CASES])
def test_api_export_holds_exactly_the_filtered_executions(
    rows, reviewer_client, fmt, query, expected
):
    query = fill(query, rows)
    response = reviewer_client.get(f"/api/v1/executions/export?format={fmt}&{query}")
    assert response.status_code == 200
    got = rows_of(response, fmt)
    want = ids_where(rows, expected(rows))
    assert len(got) == len(want) and {r["id"] for r in got} == want
    # The same rows as the list endpoint with the same filters, oldest first.
    listed = reviewer_client.get(f"/api/v1/executions?page_size=200&{query}").json()["results"]
    assert {r["id"] for r in listed} == want
    times = [r["created_at"] for r in got]
    assert times == sorted(times)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_columns_are_the_execution_json_fields(rows, reviewer_client, fmt):
    names = [c.name for c in EXECUTION_COLUMNS]
    # Links and guard notes are derived (the notes from guard_decisions, which is exported).
    derived = {"links", "guard_notes"}
    assert names == [f for f in ExecutionSerializer.Meta.fields if f not in derived]
    assert not {"sealed_secrets", "raw_input"} & {c.source for c in EXECUTION_COLUMNS}
    response = reviewer_client.get(f"/api/v1/executions/export?format={fmt}")
    text = body_of(response)
    assert "sealed-never-exported" not in text
    first = rows_of(reviewer_client.get(f"/api/v1/executions/export?format={fmt}"), fmt)[0]
    assert list(first) == names
    execution = rows["executions"][0]
    assert first["id"] == str(execution.pk) and first["tool_name"] == "tool_one"
    assert first["created_at"] == "2025-01-10T12:00:00.000000+00:00"
    if fmt == "jsonl":
        assert first["input_data"] == {"i": 0} and first["role_id"] == execution.role_id
    else:
        assert json.loads(first["input_data"]) == {"i": 0} and first["role_id"] == str(
            execution.role_id
        )


def test_export_headers_and_streaming(rows, reviewer_client):
    response = reviewer_client.get("/api/v1/executions/export?format=csv")
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="executions-')
    assert response["Content-Disposition"].endswith('.csv"')
    jsonl = reviewer_client.get("/api/v1/executions/export?format=jsonl")
    assert jsonl["Content-Type"].startswith("application/x-ndjson")
    assert jsonl["Content-Disposition"].endswith('.jsonl"')
    default = reviewer_client.get("/api/v1/executions/export")
    assert default["Content-Type"].startswith("text/csv")


def test_export_reads_in_chunks_and_writes_in_pieces(rows, reviewer_client, monkeypatch):
    """Constant memory: an iterator over values(), handed on piece by piece."""
    from django.db.models.query import QuerySet

    chunk_sizes = []
    real_iterator = QuerySet.iterator

    def spy(self, chunk_size=None):
        chunk_sizes.append(chunk_size)
        return real_iterator(self, chunk_size=chunk_size)

    monkeypatch.setattr(QuerySet, "iterator", spy)
    monkeypatch.setattr(exports, "PIECE_BYTES", 200)
    response = reviewer_client.get("/api/v1/executions/export?format=jsonl")
    pieces = list(response.streaming_content)
    assert chunk_sizes == [500]
    assert len(pieces) > 5  # handed on as it is read, not as one body
    assert sum(len(p.splitlines()) for p in pieces) == 30


def test_bad_export_parameters_are_400_naming_the_field(rows, reviewer_client):
    bad = reviewer_client.get("/api/v1/executions/export?format=xml")
    assert bad.status_code == 400
    assert bad.json()["error"]["details"][0]["field"] == "format"
    bad_status = reviewer_client.get("/api/v1/executions/export?format=csv&status=nope")
    assert bad_status.status_code == 400
    assert bad_status.json()["error"]["details"][0]["field"] == "status"


def test_export_shows_only_what_the_caller_may_see(rows):
    """A person sees their own executions and their agents' (as in the list), nothing else."""
    other_owner = make_user("owner-other")
    agent_services.agent_update(actor=None, agent=rows["agents"][1], data={"owner": other_owner})
    client = token_client(rows["owner"])
    got = jsonl_rows(client.get("/api/v1/executions/export?format=jsonl"))
    assert {r["id"] for r in got} == ids_where(rows, lambda e: e.agent_id == rows["agents"][0].pk)
    assert client.get("/api/v1/executions/export").status_code == 200
    assert token_client(make_user("nobody")).get("/api/v1/executions/export").status_code == 200
    assert (
        body_of(token_client(make_user("nobody2")).get("/api/v1/executions/export")).count("\n")
        == 1
    )  # the header only


# CSV formula injection


def test_csv_cells_starting_with_a_formula_character_are_quoted(rows, reviewer_client):
    tool = rows["tools"][0]
    evil = record(
        at=timezone.now(),
        tool=tool,
        tool_name='=HYPERLINK("http://evil","x")',
        principal_name="@SUM(A1)",
        status="failed",
        error_type="+cmd",
        error_message="-2+3",
        request_id="\tTAB",
        input_data={"a": "=1+1"},
        output_data='=WEBSERVICE("http://evil")',
        execution_time_ms=-1.5,
    )
    got = csv_rows(reviewer_client.get(f"/api/v1/executions/export?format=csv&tool_id={tool.pk}"))
    row = next(r for r in got if r["id"] == str(evil.pk))
    assert row["tool_name"] == '\'=HYPERLINK("http://evil","x")'
    assert row["principal"] == "'@SUM(A1)"
    assert row["error_type"] == "'+cmd" and row["error_message"] == "'-2+3"
    assert row["request_id"] == "'\tTAB"
    assert json.loads(row["input_data"]) == {"a": "=1+1"}  # JSON text starts with {
    assert row["output_data"] == '"=WEBSERVICE(\\"http://evil\\")"'
    assert row["execution_time_ms"] == "-1.5"  # a number, not a formula
    # JSON Lines carries values untouched.
    line = next(
        r
        for r in jsonl_rows(
            reviewer_client.get(f"/api/v1/executions/export?format=jsonl&tool_id={tool.pk}")
        )
        if r["id"] == str(evil.pk)
    )
    assert line["tool_name"].startswith("=HYPERLINK") and line["execution_time_ms"] == -1.5


def test_csv_cell_rules():
    cell = exports.csv_cell
    for text in ("=1", "+1", "-1", "@x", "\tx", "\rx"):
        assert cell(text) == "'" + text
    assert cell("plain") == "plain" and cell(None) == "" and cell(True) == "true"
    assert cell(-3) == "-3" and cell({"k": "=v"}, is_json=True) == '{"k": "=v"}'
    assert cell("=x", is_json=True) == '"=x"'  # JSON text of a string starts with a quote
    assert cell(uuid.UUID(int=1)) == "00000000-0000-0000-0000-000000000001"


# Audit export through the API


@pytest.fixture
def audit_rows(db):
    for i in range(12):
        audit_record(
            actor=None,
            action="tool.created" if i % 3 else "execution.succeeded",
            target_type="registry.tool" if i % 3 else "executions.execution",
            target_id=f"t-{i}",
            target_repr="=cmd|' /C calc'!A0" if i == 5 else f"thing {i}",
            after={"i": i},
        )
    return list(AuditEvent.objects.order_by("id"))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize(
    ("query", "predicate"),
    [
        ("", lambda e: True),
        ("action=execution.", lambda e: e.action.startswith("execution.")),
        ("action=tool.created", lambda e: e.action == "tool.created"),
        ("target_type=registry.tool&target_id=t-4", lambda e: e.target_id == "t-4"),
    ],
)
def test_audit_export_holds_exactly_the_filtered_events(
    audit_rows, reviewer_client, fmt, query, predicate
):
    response = reviewer_client.get(f"/api/v1/audit/export?format={fmt}&{query}")
    assert response.status_code == 200
    got = rows_of(response, fmt)
    want = [str(e.pk) for e in AuditEvent.objects.order_by("id") if predicate(e)]
    assert want and [str(r["id"]) for r in got] == want  # chain order
    assert {"sequence", "prev_hash", "hash"} <= set(got[0])
    assert response["Content-Disposition"].startswith('attachment; filename="audit-')


def test_audit_csv_guards_formulas(audit_rows, reviewer_client):
    got = csv_rows(reviewer_client.get("/api/v1/audit/export?format=csv&target_id=t-5"))
    assert got[0]["target_repr"] == "'=cmd|' /C calc'!A0"


def test_audit_export_is_for_reviewers_and_platform_admins(audit_rows, plain_client, staff_client):
    assert plain_client.get("/api/v1/audit/export?format=csv").status_code == 403
    assert plain_client.get("/api/v1/audit").status_code == 403
    assert staff_client.get("/api/v1/audit/export?format=jsonl").status_code == 200


# Canary secrets: a secret config and a per-call secret appear in no export.


@pytest.fixture
def canary_world(upstream, allow_loopback, eager_tasks, owner):
    role = role_services.role_create(actor=None, name="callers")
    agent = agent_services.agent_create(
        actor=None, name="agent-canary", owner=owner, role_ids=[role.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name="canary_tool",
        type="http",
        parameters=[
            {"name": "path", "type": "string", "required": True},
            {"name": "token", "type": "string"},
            {"name": "n", "type": "integer"},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}"},
            {"config_key": "auth_type", "config_value": "bearer_token"},
            {"config_key": "bearer_token", "config_value": CANARY, "is_secret": True},
            {
                "config_key": "headers_input_map",
                "config_value": {"token": {"header": "X-Token", "template": "T {value}"}},
            },
        ],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    client = token_client(agent.user)
    calls = [
        {"path": "echo", "token": PER_CALL},  # succeeds; the echo repeats every header
        {"path": "echo-header/x-token", "token": PER_CALL},  # fails; the error repeats it
        {"path": "echo", "token": PER_CALL, "n": "not a number"},  # invalid
    ]
    for arguments in calls:
        client.post(
            "/api/v1/executions",
            {"tool_id": str(tool.pk), "input_data": arguments, "wait": True},
            format="json",
        )
    assert Execution.objects.count() == 3
    assert upstream.requests and upstream.requests[0].headers["x-token"] == f"T {PER_CALL}"
    return {"tool": tool}


@pytest.mark.django_db(transaction=True)
def test_no_secret_in_any_export(canary_world, reviewer_user, reviewer_client):
    admin_client = Client()
    admin_client.force_login(reviewer_user)
    responses = []
    for fmt in ("csv", "jsonl"):
        responses.append(reviewer_client.get(f"/api/v1/executions/export?format={fmt}"))
        responses.append(reviewer_client.get(f"/api/v1/audit/export?format={fmt}"))
        for model in ("executions_execution", "registry_auditevent"):
            responses.append(admin_client.get(reverse(f"admin:{model}_export", args=[fmt])))
    texts = [body_of(r) for r in responses]
    assert all(r.status_code == 200 for r in responses)
    assert sum(text.count(str(canary_world["tool"].pk)) for text in texts) > 0
    for text in texts:
        assert CANARY not in text and PER_CALL not in text
    exported = jsonl_rows(reviewer_client.get("/api/v1/executions/export?format=jsonl"))
    assert sorted(r["status"] for r in exported) == ["failed", "invalid", "succeeded"]
