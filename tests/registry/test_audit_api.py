"""``GET /api/v1/audit`` and its export: filters, cursor pages, who may read, a verifiable file."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest

from registry.models import AuditEvent
from registry.services.audit import audit_record
from registry.services.audit_chain import GENESIS, audit_seal_all, event_hash
from tests.conftest import token_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def event(*, at=None, **fields) -> AuditEvent:
    with mock.patch("django.utils.timezone.now", return_value=at or datetime.now(UTC)):
        return audit_record(**{"actor": None, **fields})


@pytest.fixture
def events(db):
    alice = make_user("alice")
    made = []
    start = datetime(2025, 3, 1, tzinfo=UTC)
    for i in range(9):
        made.append(
            event(
                at=start + timedelta(days=10 * i),
                actor=alice if i % 2 else None,
                action=["execution.succeeded", "execution.denied", "tool.created"][i % 3],
                target_type="executions.execution" if i % 3 < 2 else "registry.tool",
                target_id=f"target-{i % 4}",
                target_repr=f"thing {i}",
                after={"i": i},
            )
        )
    return {"events": made, "alice": alice}


def ids(response) -> list[int]:
    return [row["id"] for row in response.json()["results"]]


def test_an_agent_is_found_by_its_own_name_too(db, reviewer_client):
    from registry.services import agents as agent_services

    owner = make_user("owner-ann")
    agent = agent_services.agent_create(actor=None, name="bot", owner=owner)
    mine = event(actor=agent.user, action="execution.denied", target_type="t", target_id="1")
    event(actor=owner, action="execution.denied", target_type="t", target_id="2")
    for name in ("bot", "agent.bot"):
        response = reviewer_client.get(f"/api/v1/audit?actor={name}")
        assert ids(response) == [mine.pk], name


def test_list_filters(events, reviewer_client):
    made = events["events"]

    def expect(query, predicate):
        response = reviewer_client.get(f"/api/v1/audit?page_size=200&{query}")
        assert response.status_code == 200, response.content
        wanted = sorted((e.pk for e in made if predicate(e)), reverse=True)
        got = [i for i in ids(response) if i in {e.pk for e in made}]
        assert got == wanted, query

    expect("action=execution.", lambda e: e.action.startswith("execution."))
    expect("action=execution.*", lambda e: e.action.startswith("execution."))
    expect("action=execution.denied", lambda e: e.action == "execution.denied")
    expect("actor=alice", lambda e: e.actor_name == "alice")
    expect(f"actor_id={events['alice'].pk}", lambda e: e.actor_id == events["alice"].pk)
    expect("target_type=registry.tool", lambda e: e.target_type == "registry.tool")
    expect(
        "target_type=executions.execution&target_id=target-1",
        lambda e: e.target_type == "executions.execution" and e.target_id == "target-1",
    )
    expect(
        "occurred_after=2025-04-01&occurred_before=2025-07-01T00:00:00Z",
        lambda e: (
            datetime(2025, 4, 1, tzinfo=UTC) <= e.occurred_at < datetime(2025, 7, 1, tzinfo=UTC)
        ),
    )


def test_request_id_filter_matches_the_writing_request(db, staff_client, reviewer_client):
    created = staff_client.post(
        "/api/v1/tools", {"name": "audited_tool", "type": "http"}, format="json"
    )
    request_id = created["X-Request-ID"]
    body = reviewer_client.get(f"/api/v1/audit?request_id={request_id}").json()
    assert [row["action"] for row in body["results"]] == ["tool.created"]
    row = body["results"][0]
    assert row["request_id"] == request_id and row["actor_name"] == "alice-staff"
    assert set(row) >= {"sequence", "prev_hash", "hash", "before", "after", "occurred_at"}


def test_cursor_pages_walk_every_event_once(events, reviewer_client):
    seen, url = [], "/api/v1/audit?page_size=4"
    while url:
        body = reviewer_client.get(url).json()
        seen.extend(row["id"] for row in body["results"])
        url = body["next"]
    assert seen == sorted(AuditEvent.objects.values_list("pk", flat=True), reverse=True)
    assert reviewer_client.get("/api/v1/audit?page_size=500").status_code == 400


def test_bad_filters_are_400_naming_the_field(events, reviewer_client):
    for query, field in (
        ("occurred_after=yesterday", "occurred_after"),
        ("occurred_before=2025-13-01", "occurred_before"),
        ("actor_id=bob", "actor_id"),
    ):
        response = reviewer_client.get(f"/api/v1/audit?{query}")
        assert response.status_code == 400, query
        assert response.json()["error"]["details"][0]["field"] == field
    bad_format = reviewer_client.get("/api/v1/audit/export?format=pdf")
    assert bad_format.status_code == 400


def test_only_reviewers_and_platform_admins_read_the_audit_log(
    events, reviewer_client, staff_client, plain_client, superuser, anon_client
):
    assert reviewer_client.get("/api/v1/audit").status_code == 200
    assert staff_client.get("/api/v1/audit").status_code == 200
    assert token_client(superuser).get("/api/v1/audit").status_code == 200
    for path in ("/api/v1/audit", "/api/v1/audit/export?format=jsonl"):
        denied = plain_client.get(path)
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission_denied"
        assert anon_client.get(path).status_code == 401


@pytest.mark.django_db(transaction=True)
def test_an_exported_file_verifies_against_the_chain(reviewer_user):
    for i in range(5):
        audit_record(
            actor=None,
            action="tool.updated",
            target_type="registry.tool",
            target_id="x",
            target_repr="=formula-looking repr" if i == 2 else f"tool {i}",
            before={"n": i},
            after={"n": i + 1, "nested": {"b": 1, "a": [1, "two"]}},
        )
    audit_seal_all(grace=timedelta(0))
    client = token_client(reviewer_user)
    response = client.get("/api/v1/audit/export?format=jsonl")
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert rows and all(row["sequence"] for row in rows)
    prev = GENESIS
    for row in rows:
        assert row["prev_hash"] == prev
        content = {**row, "occurred_at": datetime.fromisoformat(row["occurred_at"])}
        assert event_hash(prev, content, row["sequence"]) == row["hash"], row["id"]
        prev = row["hash"]
