"""Executions in the admin: the test run uses the pipeline; records are read-only."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from executions.models import Execution
from registry.services import tools as tool_services

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin_client(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


@pytest.fixture
def tool(upstream, allow_loopback, eager_tasks):
    return tool_services.tool_create(
        actor=None,
        name="admin_echo",
        type="http",
        parameters=[{"name": "q", "type": "integer", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/echo"},
            {"config_key": "api_key", "config_value": "admin-canary-key", "is_secret": True},
            {"config_key": "auth_type", "config_value": "api_key"},
        ],
    )


def test_test_run_from_the_tool_page(admin_client, tool, staff_user):
    page = admin_client.get(reverse("admin:registry_tool_change", args=[tool.pk])).content.decode()
    assert "Test run" in page
    url = reverse("admin:registry_tool_test_run", args=[tool.pk])
    assert admin_client.get(url).status_code == 200
    response = admin_client.post(url, {"arguments": '{"q": "7"}', "wait_seconds": 10})
    html = response.content.decode()
    assert response.status_code == 200 and "succeeded" in html
    assert "admin-canary-key" not in html
    execution = Execution.objects.get()
    assert execution.principal == staff_user and execution.input_data == {"q": 7}
    assert execution.entry_point == "admin"  # the record says which door the call came in by

    bad = admin_client.post(
        url, {"arguments": '{"q": "seven"}', "wait_seconds": 1}
    ).content.decode()
    assert "invalid_arguments" in bad and Execution.objects.filter(status="invalid").count() == 1


def test_execution_records_are_read_only(admin_client, superuser, tool):
    admin_client.post(
        reverse("admin:registry_tool_test_run", args=[tool.pk]),
        {"arguments": '{"q": 1}', "wait_seconds": 5},
    )
    execution = Execution.objects.get()
    root = Client()
    root.force_login(superuser)
    listing = root.get(reverse("admin:executions_execution_changelist"))
    assert listing.status_code == 200 and b"admin_echo" in listing.content
    found = root.get(
        reverse("admin:executions_execution_changelist") + f"?q={execution.request_id}"
    )
    assert str(execution.pk)[:8].encode() in found.content
    detail = root.get(reverse("admin:executions_execution_change", args=[execution.pk]))
    assert detail.status_code == 200 and b"admin-canary-key" not in detail.content
    assert b"Audit events of this execution" in detail.content
    assert root.get(reverse("admin:executions_execution_add")).status_code == 403
    assert (
        root.post(reverse("admin:executions_execution_change", args=[execution.pk]), {}).status_code
        == 403
    )
    assert (
        root.post(
            reverse("admin:executions_execution_delete", args=[execution.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    for query in (
        "?status__exact=succeeded",
        "?tool_type__exact=http",
        "?created_at__gte=2020-01-01",
    ):
        assert root.get(reverse("admin:executions_execution_changelist") + query).status_code == 200


def test_hard_delete_of_a_tool_with_executions_is_refused(staff_client, tool, admin_client):
    admin_client.post(
        reverse("admin:registry_tool_test_run", args=[tool.pk]),
        {"arguments": '{"q": 1}', "wait_seconds": 5},
    )
    response = staff_client.delete(f"/api/v1/tools/{tool.pk}?hard_delete=true")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "tool_in_use"
    assert "executions" in response.json()["error"]["message"]


def test_the_test_run_page_does_not_echo_a_per_call_secret(admin_client, upstream, allow_loopback):
    tool = tool_services.tool_create(
        actor=None,
        name="admin_session_echo",
        type="http",
        parameters=[
            {"name": "q", "type": "integer", "required": True},
            {"name": "session", "type": "string", "required": True},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/echo"},
            {"config_key": "headers_input_map", "config_value": {"session": "X-Session"}},
        ],
    )
    url = reverse("admin:registry_tool_test_run", args=[tool.pk])
    canary = "CANARY_TESTRUN_SESS_5521"
    for arguments in (f'{{"q": 3, "session": "{canary}"}}', f'{{"q": "x", "session": "{canary}"}}'):
        html = admin_client.post(url, {"arguments": arguments, "wait_seconds": 10}).content.decode()
        assert canary not in html
        assert "&quot;q&quot;" in html  # the other arguments are shown again
