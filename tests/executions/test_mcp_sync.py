"""Syncing MCP servers into the registry, against the real test MCP server (HTTP and stdio)."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from executions import mcp_client
from executions.mcp_sync import mcp_server_sync
from registry.models import AuditEvent, MCPServer, Tool, ToolGrant
from registry.services import mcp as services
from registry.services.catalog import tool_upsert
from registry.services.tools import tool_update
from tests.executions.test_mcp import ALL_TOOLS, SERVER_SCRIPT, ServerProcess, free_port

pytestmark = pytest.mark.django_db

TOKEN = f"sync-canary-{uuid.uuid4().hex}"


@pytest.fixture(scope="module", autouse=True)
def _clean_runtime() -> Iterator[None]:
    mcp_client.shutdown()
    yield
    mcp_client.shutdown()


@pytest.fixture(scope="module")
def http_server() -> Iterator[ServerProcess]:
    server = ServerProcess("streamable-http", "--token", TOKEN, "--page-size", "4").start()
    yield server
    server.stop()


@pytest.fixture
def loopback(settings):
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    return settings


@pytest.fixture
def web(http_server, loopback) -> MCPServer:
    return services.mcp_server_create(
        actor=None,
        name="web",
        transport="streamable_http",
        url=http_server.url,
        auth_token=TOKEN,
        timeout_seconds=15,
    )


def tools_of(server: MCPServer) -> dict[str, Tool]:
    return {t.name: t for t in services.mcp_server_tools(server)}


def audit_text() -> str:
    return json.dumps(list(AuditEvent.objects.values("before", "after", "target_repr")))


def test_sync_creates_one_mcp_tool_per_server_tool(web):
    report = mcp_server_sync(actor=None, server=web)
    assert report.ok, report.error
    assert sorted(report.created) == sorted(f"web__{name}" for name in ALL_TOOLS)
    tools = tools_of(web)
    assert set(tools) == {f"web__{name}" for name in ALL_TOOLS}

    add = tools["web__add"]
    assert add.type == "mcp" and add.is_active
    assert add.description == "Add two integers."
    assert add.timeout_seconds == 15
    assert add.tool_metadata == {
        "mcp_server": "web",
        "mcp_server_id": str(web.pk),
        "remote_tool_name": "add",
        "mcp_listed_name": "web__add",
    }
    configs = {c.config_key: c.plain_value for c in add.configs.all()}
    assert configs == {"remote_tool_name": "add", "server_id": str(web.pk)}
    inputs = {p.name: (p.type, p.required) for p in add.parameters.all()}
    assert inputs == {"a": ("integer", True), "b": ("integer", True)}
    assert add.input_schema()["required"] == ["a", "b"]
    assert {p.name for p in tools["web__slow"].parameters.all()} == {"seconds"}
    assert tools["web__slow"].parameters.get().type == "number"
    assert not tools["web__structured"].parameters.exists()

    # New tools have no grants; the server records the sync; the audit summarises it.
    assert not ToolGrant.objects.filter(tool__in=tools.values()).exists()
    web.refresh_from_db()
    assert web.last_synced_at is not None and web.last_sync_error == ""
    event = AuditEvent.objects.get(action="mcp_server.synced")
    assert sorted(event.after["created"]) == sorted(report.created)
    assert AuditEvent.objects.filter(action="tool.created").count() == len(ALL_TOOLS)
    # The token was used, never recorded.
    assert TOKEN not in audit_text() and TOKEN not in json.dumps(report.as_dict())

    # The executor finds the server from the tool alone.
    assert services.mcp_server_for_tool(add) == web
    spec = mcp_client.MCPServerSpec.from_mapping(services.mcp_server_spec(web))
    outcome = mcp_client.call_tool(
        spec, add.configs.get(config_key="remote_tool_name").plain_value, {"a": 2, "b": 3}
    )
    assert outcome.content == [{"type": "text", "text": "5"}]


def test_resync_without_changes_writes_and_audits_nothing(web):
    assert mcp_server_sync(actor=None, server=web).ok
    events = AuditEvent.objects.count()
    stamps = {t.name: t.updated_at for t in tools_of(web).values()}
    report = mcp_server_sync(actor=None, server=web)
    assert report.ok
    assert report.created == report.updated == report.deactivated == []
    assert sorted(report.unchanged) == sorted(stamps)
    assert AuditEvent.objects.count() == events
    assert {t.name: t.updated_at for t in tools_of(web).values()} == stamps


def test_resync_repairs_changed_descriptions_and_parameters(web):
    assert mcp_server_sync(actor=None, server=web).ok
    add = Tool.objects.get(name="web__add")
    tool_upsert(
        actor=None,
        name="web__add",
        tool=add,
        fields={"description": "edited"},
        parameters=[{"name": "x", "type": "string"}],
    )
    report = mcp_server_sync(actor=None, server=web)
    assert report.updated == ["web__add"]
    add.refresh_from_db()
    assert add.description == "Add two integers."
    assert sorted(p.name for p in add.parameters.all()) == ["a", "b"]
    assert AuditEvent.objects.filter(action="mcp_server.synced").count() == 2


def test_allow_and_deny_lists(web):
    services.mcp_server_update(
        actor=None,
        server=web,
        data={"tools_allowed": ["add", "echo", "s*"], "tools_denied": ["slow", "steps"]},
    )
    report = mcp_server_sync(actor=None, server=web)
    assert report.ok
    assert sorted(report.created) == ["web__add", "web__echo", "web__structured"]

    # Denying a synced tool deactivates it at once (a sync finds nothing left to
    # do); lifting the denial and syncing brings it back.
    services.mcp_server_update(
        actor=None, server=web, data={"tools_denied": ["slow", "steps", "echo"]}
    )
    echo = Tool.objects.get(name="web__echo")
    assert echo.is_active is False and echo.tool_metadata["mcp_sync_state"] == "denied"
    report = mcp_server_sync(actor=None, server=web)
    assert report.ok and report.deactivated == []
    services.mcp_server_update(actor=None, server=web, data={"tools_denied": []})
    report = mcp_server_sync(actor=None, server=web)
    assert "web__echo" in report.updated and "web__slow" in report.created
    echo.refresh_from_db()
    assert echo.is_active is True and "mcp_sync_state" not in echo.tool_metadata


def test_vanished_tool_is_deactivated_and_admin_deactivation_is_respected(web):
    assert mcp_server_sync(actor=None, server=web).ok
    # A tool a previous sync created that the server no longer offers.
    gone = tool_upsert(
        actor=None,
        name="web__retired",
        type="mcp",
        metadata={
            "mcp_server": "web",
            "mcp_server_id": str(web.pk),
            "remote_tool_name": "retired",
        },
        configs={"remote_tool_name": "retired", "server_id": str(web.pk)},
    ).tool
    # An admin switched this one off: a sync must not switch it back on.
    Tool.objects.filter(name="web__echo").update(is_active=False)

    report = mcp_server_sync(actor=None, server=web)
    assert report.ok
    assert report.deactivated == ["web__retired"]
    gone.refresh_from_db()
    assert gone.is_active is False and gone.tool_metadata["mcp_sync_state"] == "vanished"
    assert Tool.objects.get(name="web__echo").is_active is False
    event = AuditEvent.objects.filter(action="mcp_server.synced").latest("id")
    assert event.after["deactivated"] == ["web__retired"]


def test_a_name_another_tool_holds_is_refused_naming_both(web):
    Tool.objects.create(name="web__add", type="http")  # someone else holds the name
    report = mcp_server_sync(actor=None, server=web)
    assert report.ok
    assert "web__add" not in report.created
    (refusal,) = [s for s in report.skipped if s["tool"] == "add"]
    assert "'web__add'" in refusal["reason"] and "(http)" in refusal["reason"]
    assert Tool.objects.get(name="web__add").type == "http"
    assert not services.mcp_server_tools(web).filter(tool_metadata__remote_tool_name="add")
    event = AuditEvent.objects.get(action="mcp_server.synced")
    assert "add" in event.after["skipped"]
    # Freed, the name is the synced tool's at the next sync.
    Tool.objects.filter(name="web__add", type="http").delete()
    assert "web__add" in mcp_server_sync(actor=None, server=web).created


def test_the_operator_chooses_the_prefix_including_none(web, http_server):
    services.mcp_server_update(actor=None, server=web, data={"tool_prefix": ""})
    report = mcp_server_sync(actor=None, server=web)
    assert sorted(report.created) == sorted(ALL_TOOLS)
    assert Tool.objects.get(name="add").tool_metadata["remote_tool_name"] == "add"

    # A second server listed without a prefix collides on every name: each refusal names
    # the tool that holds the name and the server it came from.
    other = services.mcp_server_create(
        actor=None,
        name="other",
        transport="streamable_http",
        url=http_server.url,
        auth_token=TOKEN,
        tool_prefix="",
    )
    report = mcp_server_sync(actor=None, server=other)
    assert report.created == [] and len(report.skipped) == len(ALL_TOOLS)
    (refusal,) = [s for s in report.skipped if s["tool"] == "add"]
    assert "tool 'add' (tool 'add' of MCP server 'web')" in refusal["reason"]

    # A prefix of the operator's own renames the listed tools at the next sync.
    services.mcp_server_update(actor=None, server=other, data={"tool_prefix": "o-"})
    assert sorted(mcp_server_sync(actor=None, server=other).created) == sorted(
        f"o-{name}" for name in ALL_TOOLS
    )
    services.mcp_server_update(actor=None, server=web, data={"tool_prefix": "w_"})
    report = mcp_server_sync(actor=None, server=web)
    assert sorted(report.updated) == sorted(f"w_{name}" for name in ALL_TOOLS)
    assert not Tool.objects.filter(name="add").exists()


def test_a_rename_made_in_toolhub_survives_every_sync(web):
    assert mcp_server_sync(actor=None, server=web).ok
    add = Tool.objects.get(name="web__add")
    tool_update(actor=None, tool=add, data={"name": "adder"})
    report = mcp_server_sync(actor=None, server=web)
    assert "adder" in report.unchanged and not Tool.objects.filter(name="web__add").exists()
    # Neither a new prefix nor a renamed server moves it; the others follow.
    services.mcp_server_update(actor=None, server=web, data={"name": "web2"})
    report = mcp_server_sync(actor=None, server=web)
    assert "web2__echo" in report.updated and "web2__add" not in report.updated
    assert Tool.objects.get(pk=add.pk).name == "adder"
    services.mcp_server_update(actor=None, server=web, data={"tool_prefix": ""})
    report = mcp_server_sync(actor=None, server=web)
    assert "echo" in report.updated
    assert Tool.objects.get(pk=add.pk).name == "adder"
    # A tool the sync named is renamed by the sync; one it did not name is the operator's.
    assert Tool.objects.get(name="echo").tool_metadata["mcp_listed_name"] == "echo"
    assert Tool.objects.get(pk=add.pk).tool_metadata["mcp_listed_name"] == "web__add"


def test_a_listed_tool_is_not_renamed_onto_a_taken_name(web):
    assert mcp_server_sync(actor=None, server=web).ok
    Tool.objects.create(name="add", type="http")
    services.mcp_server_update(actor=None, server=web, data={"tool_prefix": ""})
    report = mcp_server_sync(actor=None, server=web)
    assert "echo" in report.updated
    assert Tool.objects.filter(name="web__add", type="mcp").exists()
    assert any("not renamed to 'add'" in w and "(http)" in w for w in report.warnings)


def test_renamed_server_renames_its_tools(web):
    assert mcp_server_sync(actor=None, server=web).ok
    services.mcp_server_update(actor=None, server=web, data={"name": "web2"})
    report = mcp_server_sync(actor=None, server=web)
    assert sorted(report.updated) == sorted(f"web2__{name}" for name in ALL_TOOLS)
    assert not Tool.objects.filter(name__startswith="web__").exists()
    assert Tool.objects.get(name="web2__add").tool_metadata["mcp_server"] == "web2"


def test_server_down_is_a_clear_error_and_changes_nothing(web, http_server):
    assert mcp_server_sync(actor=None, server=web).ok
    events = AuditEvent.objects.count()
    down = f"http://127.0.0.1:{free_port()}/mcp"
    services.mcp_server_update(actor=None, server=web, data={"url": down})
    report = mcp_server_sync(actor=None, server=web)
    assert not report.ok
    assert report.error_code == "mcp_unreachable"
    assert report.error and TOKEN not in report.error
    assert report.deactivated == [] and report.summary().startswith("web: sync failed")
    assert all(t.is_active for t in tools_of(web).values())
    web.refresh_from_db()
    assert web.last_sync_error == report.error
    failures = AuditEvent.objects.filter(action="mcp_server.sync_failed")
    assert failures.count() == 1
    # The same failure again is not audited again.
    assert not mcp_server_sync(actor=None, server=web).ok
    assert failures.count() == 1
    assert AuditEvent.objects.count() == events + 2  # the url update and one failure


def test_egress_refused_and_wrong_token(http_server, settings):
    settings.TOOLHUB_EGRESS_ALLOW = []
    server = services.mcp_server_create(
        actor=None, name="web", transport="streamable_http", url=http_server.url, auth_token=TOKEN
    )
    report = mcp_server_sync(actor=None, server=server)
    assert report.error_code == "mcp_egress_denied" and "127.0.0.1" in report.error
    assert not Tool.objects.exists()

    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    services.mcp_server_update(actor=None, server=server, data={}, auth_token="wrong-token-x")
    report = mcp_server_sync(actor=None, server=server)
    assert not report.ok and report.error_code == "mcp_unreachable"
    assert "401" in report.error
    assert not Tool.objects.exists()


def test_token_from_environment(http_server, loopback, monkeypatch):
    server = services.mcp_server_create(
        actor=None,
        name="web",
        transport="streamable_http",
        url=http_server.url,
        token_env_var="WEB_MCP_TOKEN",
    )
    monkeypatch.delenv("WEB_MCP_TOKEN", raising=False)
    report = mcp_server_sync(actor=None, server=server)
    assert report.error_code == "mcp_token_missing" and "WEB_MCP_TOKEN" in report.error
    monkeypatch.setenv("WEB_MCP_TOKEN", TOKEN)
    assert mcp_server_sync(actor=None, server=server).ok


def test_disabled_server_is_not_synced(web):
    services.mcp_server_update(actor=None, server=web, data={"is_enabled": False})
    report = mcp_server_sync(actor=None, server=web)
    assert report.error_code == "mcp_server_disabled"


# --------------------------------------------------------------------------- stdio


def stdio_server() -> MCPServer:
    return services.mcp_server_create(
        actor=None,
        name="local",
        transport="stdio",
        command=sys.executable,
        args=[str(SERVER_SCRIPT), "--transport", "stdio"],
        timeout_seconds=30,
        tools_denied=["slow", "fail"],
    )


def test_stdio_sync(settings):
    settings.TOOLHUB_MCP_STDIO_COMMANDS = [sys.executable]
    server = stdio_server()
    report = mcp_server_sync(actor=None, server=server)
    assert report.ok, report.error
    assert sorted(report.created) == sorted(f"local__{n}" for n in ALL_TOOLS - {"slow", "fail"})
    assert mcp_server_sync(actor=None, server=server).unchanged


def test_stdio_command_not_allowlisted(settings):
    settings.TOOLHUB_MCP_STDIO_COMMANDS = [sys.executable]
    server = stdio_server()
    settings.TOOLHUB_MCP_STDIO_COMMANDS = []  # narrowed after the save: the sync refuses
    report = mcp_server_sync(actor=None, server=server)
    assert report.error_code == "mcp_config_error"
    assert "TOOLHUB_MCP_STDIO_COMMANDS" in report.error
    assert not Tool.objects.exists()


# --------------------------------------------------------------------------- entry points


def test_sync_api(web, staff_client, reviewer_client, plain_client):
    url = f"/api/v1/mcp-servers/{web.pk}/sync"
    assert reviewer_client.post(url).status_code == 403
    assert plain_client.post(url).status_code == 403
    response = staff_client.post(url)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"] is True and len(body["created"]) == len(ALL_TOOLS)
    assert TOKEN not in response.content.decode()
    assert AuditEvent.objects.get(action="mcp_server.synced").actor_name == "alice-staff"

    services.mcp_server_update(
        actor=None, server=web, data={"url": f"http://127.0.0.1:{free_port()}/mcp"}
    )
    response = staff_client.post(url)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "mcp_unreachable" and error["details"]["ok"] is False
    services.mcp_server_update(actor=None, server=web, data={"is_enabled": False})
    assert staff_client.post(url).status_code == 409
    assert staff_client.post(f"/api/v1/mcp-servers/{uuid.uuid4()}/sync").status_code == 404


def test_sync_mcp_command(web, capsys):
    with pytest.raises(CommandError, match="Name the servers"):
        call_command("sync_mcp")
    with pytest.raises(CommandError, match="Unknown MCP server"):
        call_command("sync_mcp", "nope")
    call_command("sync_mcp", "web")
    out = capsys.readouterr().out
    assert f"web: {len(ALL_TOOLS)} created" in out and "created: web__add" in out
    call_command("sync_mcp", "--all")
    assert f"{len(ALL_TOOLS)} unchanged" in capsys.readouterr().out

    services.mcp_server_update(
        actor=None, server=web, data={"url": f"http://127.0.0.1:{free_port()}/mcp"}
    )
    with pytest.raises(CommandError, match="Sync failed for: web"):
        call_command("sync_mcp", "--all")


def test_admin_sync_action(web, superuser):
    client = Client()
    client.force_login(superuser)
    changelist = reverse("admin:registry_mcpserver_changelist")
    response = client.post(
        changelist,
        {"action": "sync_tools_now", "_selected_action": [str(web.pk)]},
        follow=True,
    )
    page = response.content.decode()
    assert f"eb: {len(ALL_TOOLS)} created" in page  # the admin capitalises the message
    assert TOKEN not in page
    assert services.mcp_server_tools(web).count() == len(ALL_TOOLS)
    change = client.get(reverse("admin:registry_mcpserver_change", args=[web.pk])).content.decode()
    assert TOKEN not in change and f"{len(ALL_TOOLS)} tool(s)" in change


def test_a_server_that_does_not_speak_mcp_is_named_plainly(upstream, loopback):
    """An ordinary JSON API at the MCP URL: one plain sentence, not the SDK's parser report."""
    server = services.mcp_server_create(
        actor=None,
        name="notmcp",
        transport="streamable_http",
        url=f"{upstream.url}/echo",
        timeout_seconds=10,
    )
    report = mcp_server_sync(actor=None, server=server)
    assert not report.ok and report.error_code == "mcp_unreachable"
    assert "not an MCP (JSON-RPC) message" in report.error, report.error
    assert len(report.error) < 300 and "pydantic" not in report.error
    assert "validation error" not in report.error
