"""Guards over the API and in the admin: platform admins write (audited), callers read
the guards of the tools they may read; a config that does not suit its kind is a 400
naming the field."""

from __future__ import annotations

import pytest
from django.test import Client

from registry.models import AuditEvent, Guard
from registry.services import grants as grant_services
from registry.services import guards as guard_services
from tests.conftest import token_client
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/guards"


@pytest.fixture
def tool():
    return ToolFactory(name="guarded_tool")


def test_a_platform_admin_creates_updates_and_deletes_a_guard_each_audited(staff_client, tool):
    created = staff_client.post(
        URL,
        {"name": "pii", "tool_id": str(tool.pk), "kind": "pii", "action": "redact"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["stage"] == "after" and body["tool_name"] == "guarded_tool"
    event = AuditEvent.objects.get(action="guard.created")
    assert event.after["name"] == "pii" and event.after["tool"] == "guarded_tool"

    changed = staff_client.patch(
        f"{URL}/{body['id']}", {"action": "block", "config": {"types": ["email"]}}, format="json"
    )
    assert changed.status_code == 200 and changed.json()["action"] == "block"
    updated = AuditEvent.objects.get(action="guard.updated")
    assert updated.before["action"] == "redact" and updated.after["action"] == "block"

    assert staff_client.delete(f"{URL}/{body['id']}").status_code == 204
    assert not Guard.objects.exists()
    assert AuditEvent.objects.get(action="guard.deleted").before["name"] == "pii"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"kind": "pii", "action": "redact", "config": {"types": ["ssn"]}}, "config.types[0]"),
        ({"kind": "pii", "action": "deny"}, "action"),
        ({"kind": "arguments", "action": "deny", "config": {}}, "config"),
        ({"kind": "arguments", "action": "deny", "config": {"max_bytes": 0}}, "config.max_bytes"),
        (
            {"kind": "arguments", "action": "deny", "config": {"condition": {"type": "nope"}}},
            "config.condition",
        ),
        ({"kind": "secrets", "action": "redact", "stage": "before"}, "stage"),
        ({"kind": "python", "action": "deny", "config": {"function": "nobody"}}, "config.function"),
        (
            {"kind": "injection", "action": "flag", "config": {"phrases": ["ab"]}},
            "config.phrases[0]",
        ),
    ],
)
def test_a_config_that_does_not_suit_its_kind_is_a_400_naming_the_field(
    staff_client, payload, field
):
    response = staff_client.post(URL, {"name": "bad", **payload}, format="json")
    assert response.status_code == 400, response.json()
    assert field in [d["field"] for d in response.json()["error"]["details"]]
    assert not Guard.objects.exists()


def test_a_second_guard_with_the_same_name_is_a_409(staff_client):
    first = {"name": "same", "kind": "injection", "action": "flag"}
    assert staff_client.post(URL, first, format="json").status_code == 201
    again = staff_client.post(URL, first, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "guard_name_taken"


def test_only_platform_admins_write_guards(manager_user, tool_managers_role, tool):
    grant_services.grant_create(actor=None, role=tool_managers_role, action="manage", tool=tool)
    client = token_client(manager_user)
    response = client.post(
        URL,
        {"name": "pii", "tool_id": str(tool.pk), "kind": "pii", "action": "redact"},
        format="json",
    )
    assert response.status_code == 403
    guard = guard_services.guard_create(actor=None, tool=tool, name="x", kind="pii", action="flag")
    assert client.delete(f"{URL}/{guard.pk}").status_code == 403
    assert Guard.objects.filter(pk=guard.pk).exists()


def test_callers_see_all_tools_guards_and_those_of_tools_they_may_read(agent_none, tool):
    client = token_client(agent_none.user)
    guard_services.guard_create(actor=None, name="everywhere", kind="secrets", action="redact")
    hidden = guard_services.guard_create(
        actor=None, tool=tool, name="hidden", kind="pii", action="redact"
    )
    listed = client.get(URL).json()["results"]
    assert [g["name"] for g in listed] == ["everywhere"]
    assert client.get(f"{URL}/{hidden.pk}").status_code == 404


def test_the_admin_adds_a_guard_for_all_tools_through_the_service(staff_user, reviewer_user):
    client = Client()
    client.force_login(staff_user)
    added = client.post(
        "/admin/registry/guard/add/",
        {
            "tool": "",
            "name": "admin-pii",
            "kind": "pii",
            "stage": "",
            "action": "redact",
            "order": "10",
            "config": '{"types": ["email"]}',
            "is_active": "on",
            "description": "",
        },
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    guard = Guard.objects.get(name="admin-pii")
    assert guard.stage == "after" and guard.tool is None
    assert AuditEvent.objects.filter(action="guard.created", target_id=str(guard.pk)).exists()
    reviewer = Client()
    reviewer.force_login(reviewer_user)
    assert reviewer.get("/admin/registry/guard/").status_code == 200
    assert reviewer.get("/admin/registry/guard/add/").status_code == 403
