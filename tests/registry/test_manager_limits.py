"""What a per-tool ``manage`` grant, with the right 'Edit tool definitions', does not cover
(``registry.policy``), and credentials that must be secret."""

from __future__ import annotations

import pytest

from registry.models import AuditEvent, ToolConfig, ToolParameter
from registry.rights import permissions_of
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services.catalog import tool_upsert
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def configs(tool) -> str:
    return f"/api/v1/tools/{tool.pk}/configs"


@pytest.fixture
def manager(tool_managers_role, manager_user):
    """A manager of the tools ``managed`` gives them, with the right to edit tools (both
    are needed to change one: docs/governance.md)."""
    tool_managers_role.permissions.add(
        *role_services.permissions_by_label(permissions_of(["edit_tools"]))
    )
    return tool_managers_role, token_client(manager_user)


def managed(role, **kwargs):
    tool = tool_upsert(actor=None, type="http", **kwargs).tool
    grant_services.grant_create(actor=None, role=role, action="manage", tool=tool)
    return tool


def test_a_tool_under_approval_keeps_its_definition_from_managers(manager, staff_client):
    role, client = manager
    tool = managed(
        role,
        name="payments",
        fields={
            "requires_approval": True,
            "approval_condition": {
                "properties": {"amount": {"minimum": 1000}},
                "required": ["amount"],
            },
        },
        parameters=[{"name": "amount", "type": "integer", "required": True}],
        configs={"base_url": "https://pay.example", "endpoint": "/pay?amount={amount}"},
    )
    amount = ToolParameter.objects.get(tool=tool, name="amount")
    before = AuditEvent.objects.count()
    # Renaming the parameter the condition reads would let every call through.
    renamed = client.patch(f"/api/v1/tools/parameters/{amount.pk}", {"name": "amt"}, format="json")
    assert renamed.status_code == 403, renamed.content
    assert "requires human approval" in renamed.json()["error"]["message"]
    for refused in (
        client.post(configs(tool), {"config_key": "endpoint", "config_value": "/p"}, format="json"),
        client.delete(f"{configs(tool)}/endpoint"),
        client.post(
            f"/api/v1/tools/{tool.pk}/parameters", {"name": "memo", "type": "string"}, format="json"
        ),
        client.delete(f"/api/v1/tools/parameters/{amount.pk}"),
        client.patch(f"/api/v1/tools/{tool.pk}", {"type": "python"}, format="json"),
    ):
        assert refused.status_code == 403, refused.content
    assert AuditEvent.objects.count() == before
    amount.refresh_from_db()
    assert amount.name == "amount"
    # What does not touch the definition stays the manager's; platform admins may do all.
    described = client.patch(f"/api/v1/tools/{tool.pk}", {"description": "x"}, format="json")
    assert described.status_code == 200, described.content
    by_admin = staff_client.patch(
        f"/api/v1/tools/parameters/{amount.pk}", {"description": "in cents"}, format="json"
    )
    assert by_admin.status_code == 200, by_admin.content


def test_a_tool_holding_secrets_keeps_its_destination_from_managers(manager, staff_client):
    role, client = manager
    tool = managed(role, name="crm", configs={"base_url": "https://crm.example"})
    staff_client.post(
        configs(tool),
        {"config_key": "api_key", "config_value": "CANARY-k-9931", "is_secret": True},
        format="json",
    )
    for key, value in (
        ("base_url", "http://collector.example"),
        ("endpoint", "https://collector.example/x"),
        # How the key is sent: a header the upstream logs, or another scheme.
        ("api_key_header", "X-Forwarded-Host"),
        ("auth_type", "basic_auth"),
    ):
        moved = client.post(
            configs(tool), {"config_key": key, "config_value": value}, format="json"
        )
        assert moved.status_code == 403, moved.content
        assert "holds secret configs" in moved.json()["error"]["message"]
    assert client.delete(f"{configs(tool)}/base_url").status_code == 403
    retyped = client.patch(f"/api/v1/tools/{tool.pk}", {"type": "database"}, format="json")
    assert retyped.status_code == 403, retyped.content
    assert ToolConfig.objects.get(tool=tool, config_key="base_url").value == "https://crm.example"
    # Other configs (not the method: what runs), and replacing the secret itself, stay
    # the manager's.
    timeout = client.post(
        configs(tool), {"config_key": "timeout_seconds", "config_value": 5}, format="json"
    )
    assert timeout.status_code in (200, 201), timeout.content
    rotated = client.post(
        configs(tool),
        {"config_key": "api_key", "config_value": "new-key-value", "is_secret": True},
        format="json",
    )
    assert rotated.status_code in (200, 201), rotated.content
    # A tool without secrets: where its calls go is still what it runs, a platform admin's.
    plain = managed(role, name="status", configs={"base_url": "https://status.example"})
    moved = client.post(
        configs(plain),
        {"config_key": "base_url", "config_value": "https://s2.example"},
        format="json",
    )
    assert moved.status_code == 403, moved.content
    assert "Only platform admins change what 'status' runs" in moved.json()["error"]["message"]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("bearer_token", "plain-token-visible"),
        ("api_key", "abc123"),
        ("password", "hunter2"),
        ("base_url", "http://user:pass@api.example"),
        ("endpoint", "https://user:pass@api.example/x"),
        ("query_params", {"api_key": "abc123"}),
        ("query_params", {"access_token": "abc123"}),
        ("query_params", '{"api_key": "as JSON text"}'),
        ("headers", '{"Authorization": "Bearer as JSON text"}'),
        ("headers", {"Ocp-Apim-Subscription-Key": "k"}),
        ("headers", {"X-Api_Key": "k"}),
        ("headers", {"X-Key": "k"}),
        ("base_url", "http://ghp_TOKENASUSER123@api.example"),
        ("base_url", "http://u%3APCTSECRET@api.example"),
        ("base_url", "https://api.example/?api_key=k123"),
        ("endpoint", "/v1/items?access_token=k123"),
    ],
)
def test_credentials_are_saved_only_as_secrets(staff_client, key, value):
    tool = tool_upsert(actor=None, name="vendor", type="http").tool
    plain = staff_client.post(
        configs(tool), {"config_key": key, "config_value": value}, format="json"
    )
    assert plain.status_code == 400, plain.content
    assert "secret" in plain.content.decode()
    assert not ToolConfig.objects.filter(tool=tool, config_key=key).exists()
    secret = staff_client.post(
        configs(tool), {"config_key": key, "config_value": value, "is_secret": True}, format="json"
    )
    assert secret.status_code == 201, secret.content


def test_a_database_password_is_saved_only_as_a_secret(staff_client):
    tool = tool_upsert(actor=None, name="warehouse", type="database").tool
    dsn = "postgresql://reader:pw-7731@db.example:5432/sales"
    plain = staff_client.post(
        configs(tool), {"config_key": "connection_string", "config_value": dsn}, format="json"
    )
    assert plain.status_code == 400 and "pw-7731" not in plain.content.decode()
    without = staff_client.post(
        configs(tool),
        {"config_key": "connection_string", "config_value": "postgresql://reader@db.example/sales"},
        format="json",
    )
    assert without.status_code == 201, without.content


def test_a_manager_cannot_rename_a_tool_into_an_mcp_servers_namespace(manager, staff_client):
    from registry.services import mcp as mcp_services

    role, client = manager
    mcp_services.mcp_server_create(
        actor=None, name="mcphttp", transport="streamable_http", url="https://mcp.example/mcp"
    )
    tool = managed(role, name="plain_http")
    renamed = client.patch(
        f"/api/v1/tools/{tool.pk}", {"name": "mcphttp__secretadmin"}, format="json"
    )
    assert renamed.status_code == 403, renamed.content
    assert "MCP server 'mcphttp'" in renamed.json()["error"]["message"]
    # A server whose own name holds underscores keeps its namespace too.
    mcp_services.mcp_server_create(
        actor=None, name="gh_", transport="streamable_http", url="https://gh.example/mcp"
    )
    squat = client.patch(f"/api/v1/tools/{tool.pk}", {"name": "gh___search"}, format="json")
    assert squat.status_code == 403, squat.content
    # Other double-underscore names (no such server yet) are reserved too: the server
    # registered later would find its namespace taken.
    other = client.patch(f"/api/v1/tools/{tool.pk}", {"name": "team__lookup"}, format="json")
    assert other.status_code == 403, other.content


def test_plain_settings_that_are_not_credentials_stay_plain(staff_client):
    tool = tool_upsert(actor=None, name="vendor_plain", type="http").tool
    for key, value in (
        ("query_params", {"sort_key": "name", "page_size": "50"}),
        ("headers", {"Accept": "application/json", "X-Request-Source": "toolhub"}),
        ("base_url", "https://api.example/v1?region=eu"),
    ):
        saved = staff_client.post(
            configs(tool), {"config_key": key, "config_value": value}, format="json"
        )
        assert saved.status_code == 201, (key, saved.content)


def test_a_host_header_is_refused(staff_client):
    tool = tool_upsert(actor=None, name="vhost", type="http").tool
    mapped = staff_client.post(
        configs(tool),
        {"config_key": "headers_input_map", "config_value": {"site": "Host"}},
        format="json",
    )
    assert mapped.status_code == 400 and "Host header" in mapped.content.decode()
    refused = staff_client.post(
        configs(tool),
        {"config_key": "headers", "config_value": {"Host": "other.example"}},
        format="json",
    )
    assert refused.status_code == 400 and "Host header" in refused.content.decode()


def test_managers_do_not_lend_operator_connections_or_lower_the_risk(manager, settings):
    role, client = manager
    settings.TOOLHUB_DATABASE_ALIASES = {"dba": "postgresql://postgres@db.example/prod"}
    tool = managed(role, name="plain_http_2", configs={"base_url": "https://a.example"})
    # Its type says what it runs: a platform admin's (registry.policy).
    moved = client.patch(f"/api/v1/tools/{tool.pk}", {"type": "database"}, format="json")
    assert moved.status_code == 403, moved.content
    tool = tool_upsert(actor=None, name="plain_http_2", type="database").tool
    alias = client.post(
        configs(tool), {"config_key": "connection_alias", "config_value": "dba"}, format="json"
    )
    assert alias.status_code == 403 and "operator" in alias.json()["error"]["message"]
    risky = managed(role, name="payments_2", metadata={"risk": "high"})
    lowered = client.patch(
        f"/api/v1/tools/{risky.pk}", {"tool_metadata": {"risk": "low"}}, format="json"
    )
    assert lowered.status_code == 403, lowered.content


def test_per_call_secrets_keep_their_destination_too(manager):
    role, client = manager
    tool = managed(
        role,
        name="percall",
        parameters=[{"name": "session", "type": "string"}],
        configs={
            "base_url": "https://api.example",
            "headers_input_map": {"session": "Authorization"},
        },
    )
    moved = client.post(
        configs(tool),
        {"config_key": "base_url", "config_value": "https://collector.example"},
        format="json",
    )
    assert moved.status_code == 403 and "per-call secrets" in moved.json()["error"]["message"]
    # Nor can the map be taken away first (and the destination moved, and the map put back).
    assert client.delete(f"{configs(tool)}/headers_input_map").status_code == 403


def test_a_manager_cannot_repoint_a_server_linked_mcp_tool(manager):
    from registry.services import mcp as mcp_services

    role, client = manager
    server = mcp_services.mcp_server_create(
        actor=None, name="srv", transport="streamable_http", url="https://mcp.example/mcp"
    )
    tool = tool_upsert(
        actor=None,
        name="srv__echo",
        type="mcp",
        metadata={"mcp_server": "srv", "mcp_server_id": str(server.pk), "remote_tool_name": "echo"},
        configs={"remote_tool_name": "echo", "server_id": str(server.pk)},
    ).tool
    grant_services.grant_create(actor=None, role=role, action="manage", tool=tool)
    inline = client.post(
        configs(tool),
        {
            "config_key": "server",
            "config_value": {"transport": "streamable_http", "url": "http://collector.example/mcp"},
        },
        format="json",
    )
    assert inline.status_code == 403, inline.content


def test_a_config_key_differing_only_in_case_from_a_known_one_is_refused(staff_client):
    """'ENDPOINT' would be saved and do nothing: the executor reads 'endpoint'."""
    tool = tool_upsert(actor=None, type="http", name="cased").tool
    response = staff_client.post(
        configs(tool), {"config_key": "ENDPOINT", "config_value": "/x"}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "Did you mean 'endpoint'" in response.json()["error"]["details"][0]["message"]
    custom = staff_client.post(
        configs(tool), {"config_key": "x_team", "config_value": "ops"}, format="json"
    )
    assert custom.status_code == 201, custom.content  # keys it does not know stay allowed
