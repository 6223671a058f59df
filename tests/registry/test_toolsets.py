"""Toolsets: platform admins manage them (API and admin, audited), reviewers read, others 403."""

from __future__ import annotations

import pytest
from django.test import Client

from registry.models import AuditEvent, Toolset
from tests.conftest import token_client
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def tools(db):
    return [ToolFactory(name="ts_one"), ToolFactory(name="ts_two")]


def create(client, tools, **extra):
    body = {"name": "Support", "slug": "support", "tool_ids": [str(t.pk) for t in tools], **extra}
    return client.post("/api/v1/toolsets", body, format="json")


def test_a_platform_admin_creates_a_toolset_and_the_change_is_audited(staff_client, tools):
    response = create(staff_client, tools, description="For the support desk")
    assert response.status_code == 201
    body = response.json()
    assert body["endpoint"] == "/mcp/support"
    assert [t["name"] for t in body["tools"]] == ["ts_one", "ts_two"]
    event = AuditEvent.objects.get(action="toolset.created")
    assert event.after["tools"] == ["ts_one", "ts_two"]
    assert event.target_id == body["id"]


def test_changing_a_toolsets_tools_is_audited_with_before_and_after(staff_client, tools):
    toolset_id = create(staff_client, tools[:1]).json()["id"]
    response = staff_client.patch(
        f"/api/v1/toolsets/{toolset_id}", {"tool_ids": [str(tools[1].pk)]}, format="json"
    )
    assert response.status_code == 200
    event = AuditEvent.objects.get(action="toolset.updated")
    assert (event.before["tools"], event.after["tools"]) == (["ts_one"], ["ts_two"])
    assert staff_client.delete(f"/api/v1/toolsets/{toolset_id}").status_code == 204
    assert AuditEvent.objects.filter(action="toolset.deleted", target_id=toolset_id).exists()


def test_a_reviewer_reads_toolsets_but_changes_none(staff_client, reviewer_client, tools):
    toolset_id = create(staff_client, tools).json()["id"]
    assert reviewer_client.get("/api/v1/toolsets").json()["count"] == 1
    assert reviewer_client.get(f"/api/v1/toolsets/{toolset_id}").status_code == 200
    assert create(reviewer_client, tools, slug="other", name="Other").status_code == 403
    assert reviewer_client.delete(f"/api/v1/toolsets/{toolset_id}").status_code == 403


def test_an_agent_may_not_see_toolsets(agent_exec):
    assert token_client(agent_exec.user).get("/api/v1/toolsets").status_code == 403


def test_a_taken_slug_is_a_409_naming_the_field(staff_client, tools):
    create(staff_client, tools)
    response = create(staff_client, tools, name="Another")
    assert response.status_code == 409
    assert response.json()["error"]["details"][0]["field"] == "slug"


def test_an_unknown_tool_id_is_a_400_naming_the_field(staff_client):
    response = staff_client.post(
        "/api/v1/toolsets",
        {"name": "X", "slug": "x", "tool_ids": ["6f1c1c1e-0000-4000-8000-000000000000"]},
        format="json",
    )
    assert response.status_code == 400
    assert "tool_ids" in response.json()["error"]["details"][0]["field"]


def test_the_admin_saves_a_toolset_through_the_audited_service(staff_user, tools):
    client = Client()
    client.force_login(staff_user)
    assert client.get("/admin/registry/toolset/add/").status_code == 200
    response = client.post(
        "/admin/registry/toolset/add/",
        {
            "name": "Ops",
            "slug": "ops",
            "description": "",
            "is_active": "on",
            "tools": [str(tools[0].pk)],
        },
    )
    assert response.status_code == 302
    toolset = Toolset.objects.get(slug="ops")
    assert list(toolset.tools.values_list("name", flat=True)) == ["ts_one"]
    assert AuditEvent.objects.get(action="toolset.created").after["tools"] == ["ts_one"]
