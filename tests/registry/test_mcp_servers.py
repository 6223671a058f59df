"""MCP servers: API (who may read and write), validation, the write-only token, the admin."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from registry.models import AuditEvent, MCPServer, Tool
from registry.services import mcp as services
from registry.services import tools as tool_services
from registry.services.catalog import tool_upsert

pytestmark = pytest.mark.django_db

CANARY = f"mcp-canary-{uuid.uuid4().hex}"
LIST = "/api/v1/mcp-servers"


def detail(server) -> str:
    return f"{LIST}/{server.pk}"


def payload(**overrides) -> dict:
    data = {
        "name": "docs",
        "description": "Documentation search",
        "transport": "streamable_http",
        "url": "https://mcp.docs.example/mcp",
        "auth_token": CANARY,
        "tools_allowed": ["search", "fetch_*"],
        "tools_denied": ["fetch_private"],
        "timeout_seconds": 20,
        "max_concurrency": 4,
    }
    data.update(overrides)
    return data


# The stdio commands these tests register (the allow-list is checked when a server is saved).
STDIO_COMMANDS = ["/usr/bin/mcp-local", "/usr/bin/vendor-mcp", "/bin/srv"]


@pytest.fixture(autouse=True)
def _stdio_commands(settings):
    settings.TOOLHUB_MCP_STDIO_COMMANDS = STDIO_COMMANDS


def audit_text() -> str:
    return json.dumps(list(AuditEvent.objects.values("before", "after", "target_repr")))


@pytest.fixture
def server(db) -> MCPServer:
    return services.mcp_server_create(
        actor=None,
        name="search",
        transport="streamable_http",
        url="https://mcp.search.example/mcp",
        auth_token=CANARY,
    )


def synced_tool(server: MCPServer, remote: str) -> Tool:
    """A tool as a sync leaves it (what the executor uses to find the server)."""
    return tool_upsert(
        actor=None,
        name=f"{server.name}__{remote}",
        type="mcp",
        metadata={
            services.META_SERVER: server.name,
            services.META_SERVER_ID: str(server.pk),
            services.META_REMOTE_NAME: remote,
        },
        configs={"remote_tool_name": remote, "server_id": str(server.pk)},
    ).tool


# --------------------------------------------------------------------------- API


def test_platform_admin_manages_servers_and_token_stays_write_only(staff_client):
    response = staff_client.post(LIST, payload(), format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["has_auth_token"] is True
    assert "auth_token" not in body and "encrypted_auth_token" not in body
    assert body["tools_allowed"] == ["search", "fetch_*"]
    assert body["tool_count"] == 0
    server = MCPServer.objects.get(name="docs")
    assert server.stored_auth_token() == CANARY
    assert CANARY not in server.encrypted_auth_token  # encrypted at rest

    listing = staff_client.get(LIST)
    assert listing.status_code == 200
    assert [s["name"] for s in listing.json()["results"]] == ["docs"]
    assert staff_client.get(detail(server)).json()["has_auth_token"] is True

    # PATCH and PUT without auth_token keep the stored token.
    response = staff_client.patch(detail(server), {"description": "new"}, format="json")
    assert response.status_code == 200
    full = payload(description="put")
    del full["auth_token"]
    response = staff_client.put(detail(server), full, format="json")
    assert response.status_code == 200, response.content
    server.refresh_from_db()
    assert server.stored_auth_token() == CANARY and server.description == "put"

    # A new token replaces it; null clears it.
    staff_client.patch(detail(server), {"auth_token": "another-secret-value"}, format="json")
    server.refresh_from_db()
    assert server.stored_auth_token() == "another-secret-value"
    response = staff_client.patch(detail(server), {"auth_token": None}, format="json")
    assert response.json()["has_auth_token"] is False

    actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
    assert actions.count("mcp_server.created") == 1
    assert actions.count("mcp_server.updated") == 4
    token_changes = AuditEvent.objects.filter(after__auth_token_changed=True)
    assert token_changes.count() == 2

    assert staff_client.delete(detail(server)).status_code == 204
    assert not MCPServer.objects.exists()
    assert AuditEvent.objects.filter(action="mcp_server.deleted").exists()
    # The canary never reached a response or the audit log.
    text = audit_text()
    assert CANARY not in text and "another-secret-value" not in text
    assert CANARY not in listing.content.decode()


def test_the_tool_prefix_is_the_operators_choice_and_audited(staff_client, server):
    assert staff_client.get(detail(server)).json()["tool_prefix"] is None  # "<name>__"
    assert server.listed_prefix == "search__"
    for prefix, listed in (("", ""), ("s-", "s-"), (None, "search__")):
        response = staff_client.patch(detail(server), {"tool_prefix": prefix}, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["tool_prefix"] == prefix
        server.refresh_from_db()
        assert server.listed_prefix == listed
    changes = AuditEvent.objects.filter(action="mcp_server.updated").order_by("id")
    assert [e.after["tool_prefix"] for e in changes] == ["", "s-", None]


def test_unchanged_update_is_not_audited(staff_client, server):
    before = AuditEvent.objects.count()
    response = staff_client.patch(detail(server), {"url": server.url}, format="json")
    assert response.status_code == 200
    response = staff_client.patch(detail(server), {"auth_token": CANARY}, format="json")
    assert response.status_code == 200
    assert AuditEvent.objects.count() == before


def test_reviewer_reads_but_cannot_write(reviewer_client, server):
    assert reviewer_client.get(LIST).status_code == 200
    body = reviewer_client.get(detail(server)).json()
    assert body["has_auth_token"] is True and CANARY not in json.dumps(body)
    assert reviewer_client.post(LIST, payload(name="x"), format="json").status_code == 403
    assert (
        reviewer_client.patch(detail(server), {"description": "x"}, format="json").status_code
        == 403
    )
    assert reviewer_client.delete(detail(server)).status_code == 403
    assert MCPServer.objects.filter(pk=server.pk).exists()


def test_other_users_are_refused(plain_client, server, anon_client):
    for response in (
        plain_client.get(LIST),
        plain_client.get(detail(server)),
        plain_client.post(LIST, payload(name="x"), format="json"),
        plain_client.delete(detail(server)),
    ):
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "permission_denied"
    assert anon_client.get(LIST).status_code in (401, 403)


def test_unknown_server_is_404(staff_client):
    response = staff_client.get(f"{LIST}/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "mcp_server_not_found"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"url": ""}, "url"),
        ({"url": "ftp://files.example/mcp"}, "url"),
        ({"url": "https://user:pw@mcp.example/mcp"}, "url"),
        ({"transport": "stdio", "url": ""}, "command"),
        ({"transport": "carrier-pigeon"}, "transport"),
        ({"name": "bad name!"}, "name"),
        ({"name": "n" * 41}, "name"),
        ({"args": [1, 2]}, "args[0]"),
        ({"args": "--verbose"}, "args"),
        ({"env": {"1BAD": "x"}}, "env"),
        ({"env": {"LEVEL": 3}}, "env.LEVEL"),
        ({"env": {"PYTHONPATH": "/srv/x"}}, "env"),  # would run other code than the command
        ({"env": {"LD_PRELOAD": "/srv/x.so"}}, "env"),
        ({"tools_allowed": "search"}, "tools_allowed"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"token_env_var": "NOT A VAR"}, "token_env_var"),
        ({"token_env_var": "DOCS_TOKEN"}, "token_env_var"),  # and a stored token: not both
        ({"tool_prefix": "bad prefix"}, "tool_prefix"),
        ({"tool_prefix": "p" * 41}, "tool_prefix"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_validation_errors_name_the_field(staff_client, changes, field):
    response = staff_client.post(LIST, payload(**changes), format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert field in [d["field"] for d in error["details"]], error
    assert not MCPServer.objects.exists()
    assert CANARY not in response.content.decode()


@pytest.mark.parametrize(
    "variable",
    ["SECRET_KEY", "DATABASE_URL", "TOOLHUB_ENCRYPTION_KEYS", "REDIS_URL", "AWS_SECRET_ACCESS_KEY"],
)
def test_token_env_var_cannot_name_any_variable_of_the_workers(staff_client, variable):
    # Its value would go out as a bearer token to the URL the row names.
    response = staff_client.post(
        LIST, payload(auth_token=None, token_env_var=variable), format="json"
    )
    assert response.status_code == 400, response.content
    (detail_,) = [d for d in response.json()["error"]["details"] if d["field"] == "token_env_var"]
    assert variable in detail_["message"]
    assert not MCPServer.objects.exists()


def test_token_env_var_allow_list_comes_from_the_settings(staff_client, settings):
    response = staff_client.post(
        LIST, payload(name="a", auth_token=None, token_env_var="DOCS_MCP_TOKEN"), format="json"
    )
    assert response.status_code == 201, response.content  # the default allows *_MCP_TOKEN

    settings.TOOLHUB_MCP_TOKEN_ENV_VARS = ["VENDOR_*"]
    refused = staff_client.post(
        LIST, payload(name="b", auth_token=None, token_env_var="DOCS_MCP_TOKEN"), format="json"
    )
    assert refused.status_code == 400
    assert "TOOLHUB_MCP_TOKEN_ENV_VARS" in refused.content.decode()
    allowed = staff_client.post(
        LIST, payload(name="c", auth_token=None, token_env_var="VENDOR_KEY"), format="json"
    )
    assert allowed.status_code == 201, allowed.content

    # Even an allow-everything list never reaches ToolHub's own settings.
    settings.TOOLHUB_MCP_TOKEN_ENV_VARS = ["*"]
    for own in ("SECRET_KEY", "TOOLHUB_AUDIT_SIGNING_KEY", "DATABASE_URL_FILE", "CELERY_X"):
        response = staff_client.post(
            LIST, payload(name="d", auth_token=None, token_env_var=own), format="json"
        )
        assert response.status_code == 400, own
        assert "ToolHub's own settings" in response.content.decode()


def test_a_stored_row_naming_a_refused_variable_never_sends_it(server, settings, monkeypatch):
    # Saved before the allow-list narrowed (or written around the service).
    monkeypatch.setenv("SECRET_KEY", CANARY)
    MCPServer.objects.filter(pk=server.pk).update(
        encrypted_auth_token="", token_env_var="SECRET_KEY"
    )
    server.refresh_from_db()
    with pytest.raises(services.MCPServerUnavailable) as excinfo:
        services.mcp_server_spec(server)
    assert excinfo.value.code == "mcp_token_not_allowed"
    assert CANARY not in excinfo.value.message

    monkeypatch.setenv("DOCS_MCP_TOKEN", "fine")
    MCPServer.objects.filter(pk=server.pk).update(token_env_var="DOCS_MCP_TOKEN")
    server.refresh_from_db()
    assert services.mcp_server_spec(server)["auth_token"] == "fine"
    settings.TOOLHUB_MCP_TOKEN_ENV_VARS = ["OTHER_*"]
    with pytest.raises(services.MCPServerUnavailable):
        services.mcp_server_spec(server)


def test_stdio_server_and_duplicate_name(staff_client):
    data = payload(
        name="local", transport="stdio", url="", command="/usr/bin/mcp-local", args=["--x"]
    )
    data["env"] = {"LOG_LEVEL": "debug"}
    del data["auth_token"]
    response = staff_client.post(LIST, data, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["args"] == ["--x"] and response.json()["has_auth_token"] is False
    again = staff_client.post(LIST, data, format="json")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "duplicate_name"


@pytest.mark.parametrize(
    "command, args",
    [
        ("/bin/sh", ["-c", "id > /tmp/owned"]),
        ("/usr/bin/mcp-local-evil", []),  # a prefix of an allowed command is not it
        ("sh", ["-c", "id"]),
    ],
)
def test_a_stdio_server_whose_command_the_allow_list_does_not_name_is_refused_at_save(
    staff_client, command, args
):
    data = payload(name="shell", transport="stdio", url="", command=command, args=args)
    del data["auth_token"]
    response = staff_client.post(LIST, data, format="json")
    assert response.status_code == 400, response.content
    detail_ = response.json()["error"]["details"][0]
    assert detail_["field"] == "command"
    assert "TOOLHUB_MCP_STDIO_COMMANDS" in detail_["message"]
    assert not MCPServer.objects.filter(name="shell").exists()

    # Nor can an allowed server be changed into one, by its command or by its transport.
    allowed = staff_client.post(
        LIST, {**data, "command": "/usr/bin/mcp-local", "args": []}, format="json"
    )
    assert allowed.status_code == 201, allowed.content
    server = MCPServer.objects.get(name="shell")
    changed = staff_client.patch(detail(server), {"command": command, "args": args}, format="json")
    assert changed.status_code == 400 and "TOOLHUB_MCP_STDIO_COMMANDS" in changed.content.decode()
    web = staff_client.post(
        LIST, payload(name="web", command=command, args=args, auth_token=None), format="json"
    )
    assert web.status_code == 201, web.content  # not stdio: the command is not run
    web_server = MCPServer.objects.get(name="web")
    turned = staff_client.patch(detail(web_server), {"transport": "stdio"}, format="json")
    assert turned.status_code == 400 and "TOOLHUB_MCP_STDIO_COMMANDS" in turned.content.decode()
    assert MCPServer.objects.get(pk=server.pk).command == "/usr/bin/mcp-local"
    assert MCPServer.objects.get(pk=web_server.pk).transport == "streamable_http"


def test_the_admin_refuses_a_stdio_command_the_allow_list_does_not_name(admin_client):
    form = admin_form(transport="stdio", url="", command="/bin/sh", args='["-c", "id"]')
    response = admin_client.post(reverse("admin:registry_mcpserver_add"), form)
    assert response.status_code == 200  # the form again, with the error on the field
    assert "TOOLHUB_MCP_STDIO_COMMANDS" in response.content.decode()
    assert not MCPServer.objects.exists()


ENV_CANARY = f"env-canary-{uuid.uuid4().hex}"


def test_stdio_environment_values_are_write_only_and_encrypted(staff_client, reviewer_client):
    data = payload(name="local", transport="stdio", url="", command="/usr/bin/mcp-local")
    del data["auth_token"]
    data["env"] = {"VENDOR_TOKEN": ENV_CANARY, "LOG_LEVEL": "debug"}
    response = staff_client.post(LIST, data, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["env"] == {"LOG_LEVEL": "********", "VENDOR_TOKEN": "********"}
    server = MCPServer.objects.get(name="local")
    assert ENV_CANARY not in server.encrypted_env  # stored encrypted
    assert services.mcp_server_spec(server)["env"]["VENDOR_TOKEN"] == ENV_CANARY

    read = reviewer_client.get(detail(server))
    assert read.status_code == 200 and ENV_CANARY not in read.content.decode()
    listed = staff_client.get(LIST)
    assert ENV_CANARY not in listed.content.decode()

    # What a read shows can be sent back: the masks keep the stored values, nothing changes.
    events = AuditEvent.objects.count()
    body = {k: v for k, v in read.json().items() if k in data or k == "env"}
    again = staff_client.put(detail(server), {**data, "env": body["env"]}, format="json")
    assert again.status_code == 200, again.content
    assert services.mcp_server_spec(server)["env"]["VENDOR_TOKEN"] == ENV_CANARY
    assert AuditEvent.objects.count() == events

    # A new value replaces one variable; the audit names it, never its value.
    changed = staff_client.patch(
        detail(server),
        {"env": {"VENDOR_TOKEN": "rotated-value", "LOG_LEVEL": "********"}},
        format="json",
    )
    assert changed.status_code == 200, changed.content
    spec_env = services.mcp_server_spec(MCPServer.objects.get(pk=server.pk))["env"]
    assert spec_env == {"VENDOR_TOKEN": "rotated-value", "LOG_LEVEL": "debug"}
    event = AuditEvent.objects.filter(action="mcp_server.updated").latest("id")
    assert event.after["env_changed"] == ["VENDOR_TOKEN"]
    assert ENV_CANARY not in audit_text() and "rotated-value" not in audit_text()

    # The mask for a variable that has no stored value is refused, naming it.
    refused = staff_client.patch(detail(server), {"env": {"NEW_TOKEN": "********"}}, format="json")
    assert refused.status_code == 400
    assert (
        "NEW_TOKEN: ******** keeps a stored value"
        in refused.json()["error"]["details"][0]["message"]
    )
    dropped = staff_client.patch(detail(server), {"env": {}}, format="json")
    assert dropped.status_code == 200 and dropped.json()["env"] == {}
    assert MCPServer.objects.get(pk=server.pk).encrypted_env == ""


def test_deleting_a_server_deactivates_its_tools(staff_client, server):
    tool = synced_tool(server, "lookup")
    other = tool_upsert(actor=None, name="unrelated", type="http").tool
    assert staff_client.delete(detail(server)).status_code == 204
    tool.refresh_from_db()
    other.refresh_from_db()
    assert tool.is_active is False and other.is_active is True
    assert tool.tool_metadata[services.META_SYNC_STATE] == "server_deleted"
    deleted = AuditEvent.objects.get(action="mcp_server.deleted")
    assert deleted.before["tools_deactivated"] == [tool.name]
    assert deleted.before["auth_token"] == "********"


def test_disabling_a_server_deactivates_its_tools(staff_client, server):
    tool = synced_tool(server, "lookup")
    removed = synced_tool(server, "gone")  # deactivated by a sync, not by disabling
    tool_services.tool_update(
        actor=None,
        tool=removed,
        data={
            "is_active": False,
            "tool_metadata": {**removed.tool_metadata, services.META_SYNC_STATE: "removed"},
        },
    )
    response = staff_client.patch(detail(server), {"is_enabled": False}, format="json")
    assert response.status_code == 200
    tool.refresh_from_db()
    assert tool.is_active is False
    # Enabling it again brings back what disabling took away, and only that.
    enabled = staff_client.patch(detail(server), {"is_enabled": True}, format="json")
    assert enabled.status_code == 200
    tool.refresh_from_db()
    removed.refresh_from_db()
    assert tool.is_active is True and not tool.tool_metadata.get(services.META_SYNC_STATE)
    assert removed.is_active is False


def test_narrowing_the_filters_deactivates_the_tools_they_now_exclude(staff_client, server):
    lookup, fetch = synced_tool(server, "lookup"), synced_tool(server, "fetch")
    response = staff_client.patch(detail(server), {"tools_denied": ["look*"]}, format="json")
    assert response.status_code == 200, response.content
    lookup.refresh_from_db()
    fetch.refresh_from_db()
    assert lookup.is_active is False and fetch.is_active is True
    assert lookup.tool_metadata[services.META_SYNC_STATE] == "denied"
    # A call is refused at admission, recorded, and never reaches the server.
    call = staff_client.post(
        "/api/v1/executions", {"tool": lookup.name, "input_data": {}}, format="json"
    )
    assert call.status_code == 409, call.content
    assert call.json()["error"]["code"] == "tool_inactive"
    updated = AuditEvent.objects.filter(action="tool.updated", target_id=str(lookup.pk))
    assert updated.latest("id").after["is_active"] is False

    # Disabled and enabled again meanwhile, the denied tool stays off.
    for enabled in (False, True):
        answer = staff_client.patch(detail(server), {"is_enabled": enabled}, format="json")
        assert answer.status_code == 200
    lookup.refresh_from_db()
    fetch.refresh_from_db()
    assert lookup.is_active is False and fetch.is_active is True

    # An allow-list works the same way; an edit leaving the filters alone changes no tool.
    narrowed = staff_client.patch(
        detail(server), {"tools_denied": [], "tools_allowed": ["lookup"]}, format="json"
    )
    assert narrowed.status_code == 200
    fetch.refresh_from_db()
    assert fetch.is_active is False
    before = AuditEvent.objects.count()
    assert (
        staff_client.patch(detail(server), {"description": "x"}, format="json").status_code == 200
    )
    assert AuditEvent.objects.count() == before + 1  # the server's own update only


def test_reenabling_leaves_off_what_the_filters_now_exclude(server):
    lookup = synced_tool(server, "lookup")
    services.mcp_server_update(actor=None, server=server, data={"is_enabled": False})
    # Narrowed while disabled: its tools are off already, and must stay so.
    MCPServer.objects.filter(pk=server.pk).update(tools_denied=["lookup"])
    server.refresh_from_db()
    services.mcp_server_update(actor=None, server=server, data={"is_enabled": True})
    lookup.refresh_from_db()
    assert lookup.is_active is False
    assert lookup.tool_metadata[services.META_SYNC_STATE] == "denied"


@pytest.mark.parametrize(
    "name",
    [
        # Each makes an allowed program run other code, or load it.
        "npm_config_node_options",
        "OPENSSL_CONF",
        "OPENSSL_MODULES",
        "GCONV_PATH",
        "GLIBC_TUNABLES",
        "MALLOC_CONF",
        "GIT_SSH_COMMAND",
        "HOME",
        "XDG_CONFIG_HOME",
        "HTTPS_PROXY",
        "NODE_EXTRA_CA_CERTS",
        "PIP_INDEX_URL",  # ends like an endpoint, still refused
        "SOMETHING_ELSE",  # not on the allow-list
    ],
)
def test_a_stdio_environment_sets_only_what_the_allow_list_names(staff_client, name):
    data = payload(name="local", transport="stdio", url="", command="/usr/bin/vendor-mcp")
    data.pop("auth_token")
    data["env"] = {name: "/srv/evil"}
    response = staff_client.post(LIST, data, format="json")
    assert response.status_code == 400, response.content
    assert name in response.json()["error"]["details"][0]["message"]
    assert not MCPServer.objects.filter(name="local").exists()


def test_credentials_and_endpoints_are_allowed_and_the_list_is_the_operators(
    staff_client, settings
):
    data = payload(name="local", transport="stdio", url="", command="/usr/bin/vendor-mcp")
    data.pop("auth_token")
    data["env"] = {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x",
        "GOOGLE_API_KEY": "k",
        "JIRA_URL": "https://jira.example",
        "LOG_LEVEL": "debug",
    }
    response = staff_client.post(LIST, data, format="json")
    assert response.status_code == 201, response.content
    settings.TOOLHUB_MCP_STDIO_ENV_VARS = ["VENDOR_*"]
    data.update(name="local2", env={"VENDOR_MODE": "x"})
    assert staff_client.post(LIST, data, format="json").status_code == 201
    data.update(name="local3", env={"GOOGLE_API_KEY": "k"})  # no longer on the list
    assert staff_client.post(LIST, data, format="json").status_code == 400


def test_tool_count_and_server_for_tool(staff_client, server):
    tool = synced_tool(server, "lookup")
    assert staff_client.get(detail(server)).json()["tool_count"] == 1
    assert services.mcp_server_for_tool(tool) == server


def test_spec_reads_the_token_from_the_environment_at_call_time(server, monkeypatch):
    spec = services.mcp_server_spec(server)
    assert spec == {
        "name": "search",
        "transport": "streamable_http",
        "timeout_seconds": 30,
        "auth_token": CANARY,
        "url": "https://mcp.search.example/mcp",
    }
    services.mcp_server_update(
        actor=None, server=server, data={"token_env_var": "SEARCH_MCP_TOKEN"}, auth_token=None
    )
    server.refresh_from_db()
    monkeypatch.delenv("SEARCH_MCP_TOKEN", raising=False)
    with pytest.raises(services.MCPServerUnavailable) as excinfo:
        services.mcp_server_spec(server)
    assert "SEARCH_MCP_TOKEN" in excinfo.value.message
    monkeypatch.setenv("SEARCH_MCP_TOKEN", "from-the-environment")
    assert services.mcp_server_spec(server)["auth_token"] == "from-the-environment"

    stdio = services.mcp_server_create(
        actor=None,
        name="local",
        transport="stdio",
        command="/bin/srv",
        args=["-v"],
        env={"A_KEY": "b"},
    )
    assert services.mcp_server_spec(stdio) == {
        "name": "local",
        "transport": "stdio",
        "timeout_seconds": 30,
        "auth_token": None,
        "command": "/bin/srv",
        "args": ["-v"],
        "env": {"A_KEY": "b"},
    }


# --------------------------------------------------------------------------- admin


@pytest.fixture
def admin_client(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


def admin_form(**overrides) -> dict:
    data = {
        "name": "wiki",
        "description": "",
        "transport": "streamable_http",
        "url": "https://mcp.wiki.example/mcp",
        "command": "",
        "args": "[]",
        "env": "{}",
        "auth_token": "",
        "token_env_var": "",
        "tools_allowed": "[]",
        "tools_denied": "[]",
        "timeout_seconds": "30",
        "max_concurrency": "",
        "is_enabled": "on",
        "tool_naming": "server",
    }
    data.update(overrides)
    return data


def test_admin_token_is_write_only(admin_client):
    add = reverse("admin:registry_mcpserver_add")
    response = admin_client.post(add, admin_form(auth_token=CANARY))
    assert response.status_code == 302, response.content.decode()[:2000]
    server = MCPServer.objects.get(name="wiki")
    assert server.stored_auth_token() == CANARY

    change = reverse("admin:registry_mcpserver_change", args=[server.pk])
    page = admin_client.get(change).content.decode()
    assert CANARY not in page and server.encrypted_auth_token not in page
    assert "set (hidden)" in page

    # Saving with the token field empty keeps the token.
    response = admin_client.post(change, admin_form(description="edited"))
    assert response.status_code == 302
    server.refresh_from_db()
    assert server.description == "edited" and server.stored_auth_token() == CANARY

    # "Remove the stored token" clears it.
    admin_client.post(change, admin_form(description="edited", clear_auth_token="on"))
    server.refresh_from_db()
    assert not server.has_auth_token

    changelist = admin_client.get(reverse("admin:registry_mcpserver_changelist"))
    assert changelist.status_code == 200 and "wiki" in changelist.content.decode()
    filtered = admin_client.get(reverse("admin:registry_mcpserver_changelist") + "?transport=sse")
    assert filtered.status_code == 200
    assert CANARY not in audit_text()
    assert AuditEvent.objects.filter(action="mcp_server.created", actor__isnull=False).exists()


def test_admin_chooses_how_the_tools_are_named(admin_client):
    add = reverse("admin:registry_mcpserver_add")
    response = admin_client.post(add, admin_form(tool_naming="none"))
    assert response.status_code == 302, response.content.decode()[:2000]
    server = MCPServer.objects.get(name="wiki")
    assert server.tool_prefix == "" and server.listed_prefix == ""
    change = reverse("admin:registry_mcpserver_change", args=[server.pk])
    page = admin_client.get(change).content.decode()
    assert 'value="none" selected' in page or 'value="none" checked' in page
    # A custom prefix needs the prefix; then it is the server's.
    response = admin_client.post(change, admin_form(tool_naming="custom", tool_prefix=""))
    assert response.status_code == 200 and "Type the prefix" in response.content.decode()
    response = admin_client.post(change, admin_form(tool_naming="custom", tool_prefix="wk_"))
    assert response.status_code == 302
    server.refresh_from_db()
    assert server.tool_prefix == "wk_"
    response = admin_client.post(change, admin_form(tool_naming="server", tool_prefix="wk_"))
    assert response.status_code == 302
    server.refresh_from_db()
    assert server.tool_prefix is None and server.listed_prefix == "wiki__"
    prefixes = [
        e.after["tool_prefix"]
        for e in AuditEvent.objects.filter(action="mcp_server.updated").order_by("id")
    ]
    assert prefixes == ["wk_", None]


def test_admin_shows_environment_names_and_keeps_masked_values(admin_client, reviewer_user):
    add = reverse("admin:registry_mcpserver_add")
    form = admin_form(
        transport="stdio", url="", command="/usr/bin/mcp-local", env=json.dumps({"K_TOKEN": CANARY})
    )
    assert admin_client.post(add, form).status_code == 302
    server = MCPServer.objects.get(name="wiki")
    assert server.stored_env() == {"K_TOKEN": CANARY}
    change = reverse("admin:registry_mcpserver_change", args=[server.pk])
    page = admin_client.get(change).content.decode()
    assert "K_TOKEN" in page and CANARY not in page

    # Saving the form as shown (masked) keeps the value; a new name with a value adds one.
    masked = json.dumps({"K_TOKEN": "********", "EXTRA_KEY": "x"})
    response = admin_client.post(change, {**form, "env": masked})
    assert response.status_code == 302, response.content.decode()[:3000]
    assert MCPServer.objects.get(pk=server.pk).stored_env() == {"K_TOKEN": CANARY, "EXTRA_KEY": "x"}
    bad = admin_client.post(change, {**form, "env": json.dumps({"NOPE_KEY": "********"})})
    assert bad.status_code == 200 and "NOPE_KEY" in bad.content.decode()

    reviewer = Client()
    reviewer.force_login(reviewer_user)
    view = reviewer.get(change)
    assert view.status_code == 200 and CANARY not in view.content.decode()
    assert "K_TOKEN=********" in view.content.decode()
    assert CANARY not in audit_text()


def test_admin_validation_error_is_shown_not_500(admin_client):
    response = admin_client.post(
        reverse("admin:registry_mcpserver_add"), admin_form(url="ftp://nope"), follow=True
    )
    assert response.status_code == 200
    assert "http" in response.content.decode()
    assert not MCPServer.objects.exists()


def test_admin_refuses_a_token_variable_outside_the_allow_list(admin_client):
    response = admin_client.post(
        reverse("admin:registry_mcpserver_add"),
        admin_form(auth_token="", token_env_var="SECRET_KEY", description="typed by hand"),
    )
    # The form again, with the error on the field and what was typed kept.
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count("ToolHub&#x27;s own settings") == 1 and "typed by hand" in page
    assert not MCPServer.objects.exists()


def test_admin_delete_deactivates_tools(admin_client, server):
    tool = synced_tool(server, "lookup")
    url = reverse("admin:registry_mcpserver_delete", args=[server.pk])
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    tool.refresh_from_db()
    assert not MCPServer.objects.exists() and tool.is_active is False


def test_admin_rights_follow_the_platform_roles(staff_user, reviewer_user, server):
    changelist = reverse("admin:registry_mcpserver_changelist")
    change = reverse("admin:registry_mcpserver_change", args=[server.pk])

    platform_admin = Client()
    platform_admin.force_login(staff_user)  # not a superuser: rights come from the role
    assert platform_admin.get(reverse("admin:registry_mcpserver_add")).status_code == 200
    page = platform_admin.get(changelist).content.decode()
    assert "sync_tools_now" in page and "Import tools" in page
    response = platform_admin.post(change, admin_form(name="search", url=server.url))
    assert response.status_code == 302

    reviewer = Client()
    reviewer.force_login(reviewer_user)
    page = reviewer.get(changelist).content.decode()
    assert "search" in page and "sync_tools_now" not in page and "Import tools" not in page
    view = reviewer.get(change)  # a read-only view
    assert view.status_code == 200
    assert CANARY not in view.content.decode()
    assert server.encrypted_auth_token not in view.content.decode()
    assert reviewer.get(reverse("admin:registry_mcpserver_add")).status_code == 403
    response = reviewer.post(change, admin_form(name="renamed", url=server.url))
    assert response.status_code == 403
    server.refresh_from_db()
    assert server.name == "search" and CANARY not in page


# --------------------------------------------------------------------------- who may link a tool


@pytest.fixture
def manager_client(db, server):
    """A person with manage on one synced tool and on one http tool, and the right to edit
    tools (both are needed to change one); not a platform admin."""
    from registry.rights import permissions_of
    from registry.services import grants as grant_services
    from registry.services import roles as role_services
    from tests.conftest import token_client
    from tests.factories import make_user

    role = role_services.role_create(actor=None, name="tool-managers")
    role.permissions.add(*role_services.permissions_by_label(permissions_of(["edit_tools"])))
    lookup = synced_tool(server, "lookup")
    plain = tool_upsert(actor=None, name="plain_http", type="http").tool
    for tool in (lookup, plain):
        grant_services.grant_create(actor=None, role=role, action="manage", tool=tool)
    person = make_user("manager-mo")
    person.groups.add(role)
    return token_client(person), lookup, plain


def test_only_platform_admins_link_tools_to_a_server(manager_client, server, staff_client):
    client, lookup, plain = manager_client
    configs = f"/api/v1/tools/{lookup.pk}/configs"
    # Pointing the tool at another remote tool (or server) would lend it the server's token.
    for key, value in (("remote_tool_name", "admin_only_tool"), ("server_id", str(server.pk))):
        refused = client.post(configs, {"config_key": key, "config_value": value}, format="json")
        assert refused.status_code == 403, refused.content
        assert "platform admins" in refused.json()["error"]["message"]
    assert client.delete(f"{configs}/remote_tool_name").status_code == 403
    turned = client.patch(f"/api/v1/tools/{plain.pk}", {"type": "mcp"}, format="json")
    assert turned.status_code == 403
    meta = client.patch(
        f"/api/v1/tools/{plain.pk}",
        {"tool_metadata": {services.META_SERVER_ID: str(server.pk)}},
        format="json",
    )
    assert meta.status_code == 403
    # Everything else a manager may still do, and a platform admin may link.
    described = client.patch(f"/api/v1/tools/{lookup.pk}", {"description": "x"}, format="json")
    assert described.status_code == 200, described.content
    linked = staff_client.post(
        configs, {"config_key": "remote_tool_name", "config_value": "lookup"}, format="json"
    )
    assert linked.status_code in (200, 201), linked.content


def test_a_servers_chosen_prefix_is_its_tools_namespace(manager_client, server):
    from registry.rights import permissions_of
    from registry.services import roles as role_services

    client, lookup, plain = manager_client
    role = lookup.grants.get().role  # renaming takes the right to register tools too
    role.permissions.add(*role_services.permissions_by_label(permissions_of(["register_tools"])))
    services.mcp_server_update(actor=None, server=server, data={"tool_prefix": "srch-"})
    refused = client.patch(f"/api/v1/tools/{plain.pk}", {"name": "srch-lookup"}, format="json")
    assert refused.status_code == 403, refused.content
    assert "'srch-'" in refused.json()["error"]["message"]
    # A server listed without a prefix claims no names.
    services.mcp_server_update(actor=None, server=server, data={"tool_prefix": ""})
    moved = client.patch(f"/api/v1/tools/{plain.pk}", {"name": "srch-plain"}, format="json")
    assert moved.status_code == 200, moved.content


def test_a_denied_remote_tool_never_gets_the_servers_credentials(server):
    from executions.services.run_configs import mcp_configs

    tool = synced_tool(server, "lookup")
    configs = {"remote_tool_name": "lookup"}
    assert mcp_configs(tool, configs)["server"]["auth_token"] == CANARY
    MCPServer.objects.filter(pk=server.pk).update(tools_denied=["look*"])
    with pytest.raises(ValueError, match="does not offer 'lookup'"):
        mcp_configs(tool, configs)


def test_a_server_saved_before_the_allow_list_narrowed_stays_editable(staff_client, settings):
    server = services.mcp_server_create(
        actor=None,
        name="legacy",
        transport="streamable_http",
        url="https://mcp.legacy.example/mcp",
        token_env_var="LEGACY_MCP_TOKEN",
    )
    settings.TOOLHUB_MCP_TOKEN_ENV_VARS = ["VENDOR_*"]
    # Disabling it (or any other edit) works; its calls are refused (see above).
    response = staff_client.patch(detail(server), {"is_enabled": False}, format="json")
    assert response.status_code == 200, response.content
    # Naming the variable again is checked under today's list.
    again = staff_client.patch(detail(server), {"token_env_var": "OTHER_MCP_TOKEN"}, format="json")
    assert again.status_code == 400 and "TOOLHUB_MCP_TOKEN_ENV_VARS" in again.content.decode()
