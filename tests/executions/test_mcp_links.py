"""Which remote tool an ``mcp`` tool calls is fixed when it is linked to its server.

The link (``server_id`` or an inline ``server``) lends the tool the server's
stored credentials. ``remote_tool_name`` is stored explicitly when the link is
made (by the API, the admin, an import or a sync), only platform admins change
it, and no call derives it from the tool's own name: renaming a tool must not
point it at another tool of the server.
"""

from __future__ import annotations

import importlib
import uuid

import pytest
from django.apps import apps
from django.test import Client
from django.urls import reverse

from registry.models import MCPServer, Tool, ToolConfig
from registry.rights import permissions_of
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import mcp as mcp_services
from registry.services import roles as role_services
from tests.conftest import token_client
from tests.executions.test_mcp import ServerProcess
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True)]

TOKEN = f"link-canary-{uuid.uuid4().hex}"


@pytest.fixture
def mcp_http():
    server = ServerProcess("streamable-http", "--token", TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def web(mcp_http, allow_loopback) -> MCPServer:
    return mcp_services.mcp_server_create(
        actor=None, name="web", transport="streamable_http", url=mcp_http.url, auth_token=TOKEN
    )


@pytest.fixture
def people(db):
    """A caller with ``execute`` and a manager with ``manage`` and the right to edit tools
    (not a platform admin)."""
    owner = make_user("owner-lina")
    callers = role_services.role_create(actor=None, name="link-callers")
    managers = role_services.role_create(actor=None, name="link-managers")
    managers.permissions.add(*role_services.permissions_by_label(permissions_of(["edit_tools"])))
    agent = agent_services.agent_create(
        actor=None, name="agent-link", owner=owner, role_ids=[callers.pk]
    )
    manager = make_user("manager-milo")
    manager.groups.add(managers)
    return {
        "caller": token_client(agent.user),
        "callers": callers,
        "manager": token_client(manager),
        "managers": managers,
    }


def remote_name(tool: Tool) -> str | None:
    config = ToolConfig.objects.filter(tool=tool, config_key="remote_tool_name").first()
    return None if config is None else config.plain_value


def test_renaming_an_mcp_tool_does_not_change_the_remote_tool(
    web, people, staff_client, eager_tasks
):
    created = staff_client.post(
        "/api/v1/tools",
        {
            "name": "web__echo",
            "type": "mcp",
            "parameters": [{"name": "text", "type": "string", "required": True}],
            "configs": [{"config_key": "server_id", "config_value": str(web.pk)}],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    tool = Tool.objects.get(name="web__echo")
    for role, action in ((people["callers"], "execute"), (people["managers"], "manage")):
        grant_services.grant_create(actor=None, role=role, action=action, tool=tool)

    # It is renamed after a tool of the server nobody was granted (renaming takes the right
    # to register tools: importers and syncs find tools by name), and a manager adds its input.
    manager = people["manager"]
    renamed = staff_client.patch(f"/api/v1/tools/{tool.pk}", {"name": "whoami"}, format="json")
    assert renamed.status_code == 200, renamed.content
    added = manager.post(
        f"/api/v1/tools/{tool.pk}/parameters",
        {"name": "form", "type": "string", "required": False},
        format="json",
    )
    assert added.status_code == 201, added.content

    response = people["caller"].post(
        "/api/v1/executions",
        {"tool": "whoami", "input_data": {"text": "hello", "form": "plain"}, "wait": 20},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "succeeded", body
    assert body["output_data"]["content"] == [{"type": "text", "text": "hello"}]  # echo ran
    assert remote_name(Tool.objects.get(pk=tool.pk)) == "echo"  # stored when it was linked
    assert TOKEN not in response.content.decode()


def test_a_linked_tool_without_a_stored_remote_name_is_not_run_by_its_own_name(
    web, people, eager_tasks
):
    tool = Tool.objects.create(name="web__whoami", type="mcp")
    ToolConfig.objects.create(tool=tool, config_key="server_id", plain_value=str(web.pk))
    grant_services.grant_create(actor=None, role=people["callers"], action="execute", tool=tool)
    response = people["caller"].post(
        "/api/v1/executions", {"tool": "web__whoami", "input_data": {}, "wait": 20}, format="json"
    )
    body = response.json()
    assert body["status"] == "failed" and body["error_type"] == "config_error", body
    assert "remote_tool_name" in body["error_message"]


@pytest.mark.parametrize("link", ["server_id", "metadata"])
def test_linking_a_tool_later_stores_its_remote_tool_name(web, staff_client, link):
    tool = staff_client.post("/api/v1/tools", {"name": "web__add", "type": "mcp"}, format="json")
    assert tool.status_code == 201, tool.content
    tool = Tool.objects.get(name="web__add")
    assert remote_name(tool) is None  # not linked yet: nothing to call
    if link == "server_id":
        response = staff_client.post(
            f"/api/v1/tools/{tool.pk}/configs",
            {"config_key": "server_id", "config_value": str(web.pk)},
            format="json",
        )
        assert response.status_code == 201, response.content
    else:
        response = staff_client.patch(
            f"/api/v1/tools/{tool.pk}",
            {"tool_metadata": {"mcp_server_id": str(web.pk)}},
            format="json",
        )
        assert response.status_code == 200, response.content
    assert remote_name(tool) == "add"


def test_linking_a_tool_in_the_admin_stores_its_remote_tool_name(web, superuser):
    client = Client()
    client.force_login(superuser)
    data = {
        "name": "web__structured",
        "description": "",
        "type": "mcp",
        "version": "1.0.0",
        "is_active": "on",
        "tool_metadata": "{}",
        "timeout_seconds": 30,
        "max_retries": 0,
        "cache_ttl_seconds": 0,
        "max_response_bytes": 1048576,
        "approval_condition": "{}",
        "approval_ttl_seconds": 86400,
        "parameters-TOTAL_FORMS": 0,
        "parameters-INITIAL_FORMS": 0,
        "configs-TOTAL_FORMS": 1,
        "configs-INITIAL_FORMS": 0,
        "configs-0-config_key": "server_id",
        "configs-0-value": str(web.pk),
        "grants-TOTAL_FORMS": 0,
        "grants-INITIAL_FORMS": 0,
        "rate_limits-TOTAL_FORMS": 0,
        "rate_limits-INITIAL_FORMS": 0,
    }
    response = client.post(reverse("admin:registry_tool_add"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    tool = Tool.objects.get(name="web__structured")
    assert remote_name(tool) == "structured"


def test_existing_linked_tools_get_the_remote_name_they_called_until_now(web):
    """The data migration stores what the old fallback gave each linked tool."""
    by_id = Tool.objects.create(name="web__add", type="mcp")
    ToolConfig.objects.create(tool=by_id, config_key="server_id", plain_value=str(web.pk))
    by_meta = Tool.objects.create(
        name="renamed_later", type="mcp", tool_metadata={"mcp_server_id": str(web.pk)}
    )
    explicit = Tool.objects.create(name="web__other", type="mcp")
    ToolConfig.objects.create(tool=explicit, config_key="server_id", plain_value=str(web.pk))
    ToolConfig.objects.create(tool=explicit, config_key="remote_tool_name", plain_value="echo")
    unlinked = Tool.objects.create(name="web__nothing", type="mcp")

    migration = importlib.import_module("registry.migrations.0014_mcp_remote_tool_name")
    migration.store_remote_tool_names(apps, None)
    assert remote_name(by_id) == "add"
    assert remote_name(by_meta) == "renamed_later"
    assert remote_name(explicit) == "echo"
    assert remote_name(unlinked) is None
