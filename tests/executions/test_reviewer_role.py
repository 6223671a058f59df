"""The reviewer: a staff person in a role holding REVIEWER_PERMISSIONS sees everything, changes nothing.

In the admin: every changelist and change page answers 200 without a Save
button, every add/change/delete POST is 403, no action changes anything, the
test run and the approval queue refuse. In the API: every read is 200, every
write 403. No secret appears on any page.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib import admin
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.models import (
    AccessToken,
    Application,
    Grant,
    IDToken,
    RefreshToken,
    set_token_value,
)

from executions.models import Approval, Execution
from registry.models import (
    Agent,
    ApiToken,
    AuditEvent,
    Consent,
    Guard,
    MCPServer,
    RateLimitRule,
    SsoGroupMapping,
    Tool,
    Toolset,
    UpstreamConnection,
)
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import guards as guard_services
from registry.services import limits as limit_services
from registry.services import mcp as mcp_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from registry.services import toolsets as toolset_services
from registry.services import upstream as upstream_services
from registry.sso.config import PROVIDER_ID
from tests.conftest import make_role, token_client
from tests.factories import make_token, make_user

pytestmark = pytest.mark.django_db

CANARY = "canary-reviewer-secret-3b9d"
MCP_CANARY = "canary-reviewer-mcp-4c0e"


def oauth_and_sso_rows(person, role, settings) -> dict:
    """A row of each OAuth and single sign-on admin page (SSO switched on, as its pages show
    only then)."""
    settings.TOOLHUB_SSO_ISSUER = "https://idp.example.com"
    settings.TOOLHUB_SSO_CLIENT_ID = "toolhub"
    settings.TOOLHUB_SSO_CLIENT_SECRET = "reviewer-test-secret"
    client = Application.objects.create(
        name="reviewed client",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/cb",
    )
    expires = timezone.now() + timedelta(hours=1)
    access = AccessToken(user=person, application=client, expires=expires, scope="tools:read")
    set_token_value(access, "tho_reviewed-access")
    access.save()
    refresh = RefreshToken(user=person, application=client, access_token=access)
    set_token_value(refresh, "thr_reviewed-refresh")
    refresh.save()
    grant = Grant.objects.create(
        user=person,
        application=client,
        code="reviewed-code",
        expires=expires,
        redirect_uri="http://127.0.0.1/cb",
        scope="tools:read",
        code_challenge="c" * 43,
        code_challenge_method="S256",
    )
    id_token = IDToken.objects.create(user=person, application=client, expires=expires)
    consent = Consent.objects.create(
        person=person, client=client, resource="http://testserver/mcp", scopes=["tools:read"]
    )
    mapping = SsoGroupMapping.objects.create(idp_group="reviewed", role=role)
    identity = SocialAccount.objects.create(
        user=person, provider=PROVIDER_ID, uid="https://idp.example.com#reviewed"
    )
    return {
        "oauth2_provider.application": client.pk,
        "oauth2_provider.accesstoken": access.pk,
        "oauth2_provider.refreshtoken": refresh.pk,
        "oauth2_provider.grant": grant.pk,
        "oauth2_provider.idtoken": id_token.pk,
        "registry.consent": consent.pk,
        "registry.ssogroupmapping": mapping.pk,
        "socialaccount.socialaccount": identity.pk,
    }


@pytest.fixture
def world(reviewer_user, owner, settings):
    readers = role_services.role_create(actor=None, name="readers")
    tool = tool_services.tool_create(
        actor=None,
        name="reviewed_tool",
        type="http",
        requires_approval=True,
        parameters=[{"name": "q", "type": "string"}],
        configs=[
            {"config_key": "base_url", "config_value": "http://127.0.0.1:9"},
            {"config_key": "api_key", "config_value": CANARY, "is_secret": True},
        ],
    )
    grant_services.grant_create(actor=None, role=readers, action="read", tool=tool)
    agent = agent_services.agent_create(
        actor=None, name="agent-reviewed", owner=owner, role_ids=[readers.pk]
    )
    make_token(agent.user, name="agent-token")
    token = ApiToken.objects.get(user=agent.user)
    server = mcp_services.mcp_server_create(
        actor=None,
        name="reviewed_mcp",
        transport="streamable_http",
        url="http://127.0.0.1:9/mcp",
        auth_token=MCP_CANARY,
    )
    rule = limit_services.rate_limit_create(
        actor=None, tool=tool, scope="global", max_requests=5, time_window_seconds=60
    )
    guard = guard_services.guard_create(
        actor=None, tool=tool, name="reviewed-guard", kind="pii", action="redact"
    )
    toolset = toolset_services.toolset_create(
        actor=None, name="Reviewed", slug="reviewed", tools=[tool]
    )
    # An upstream provider (its client secret a canary) and a person's connection to it
    # (its tokens canaries too): seen, never their secrets.
    provider = upstream_services.upstream_provider_create(
        actor=None,
        name="Reviewed IdP",
        slug="reviewed-idp",
        authorization_url="https://idp.example/auth",
        token_url="https://idp.example/token",
        client_id="toolhub",
        client_secret=CANARY,
    )
    connection = upstream_services.upstream_connection_save(
        person=owner,
        provider=provider,
        tokens=upstream_services.TokenSet(f"{CANARY}-access", f"{CANARY}-refresh", 3600),
    )
    pending = Execution.objects.create(
        tool=tool,
        tool_name=tool.name,
        agent=agent,
        principal=agent.user,
        principal_name=agent.user.username,
        status="pending_approval",
        input_data={"q": "x"},
        input_hash="h" * 64,
    )
    approval = Approval.objects.create(
        execution=pending, input_hash="h" * 64, expires_at=timezone.now() + timedelta(hours=1)
    )
    done = Execution.objects.create(
        tool=tool,
        tool_name=tool.name,
        agent=agent,
        principal=agent.user,
        principal_name=agent.user.username,
        status="succeeded",
        input_data={"q": "y"},
        output_data={"ok": True},
    )
    return {
        **oauth_and_sso_rows(owner, readers, settings),
        "owner": owner,
        "role": readers,
        "tool": tool,
        "parameter": tool.parameters.get(),
        "agent": agent,
        "token": token,
        "server": server,
        "rule": rule,
        "guard": guard,
        "toolset": toolset,
        "pending": pending,
        "approval": approval,
        "done": done,
        "grant": readers.tool_grants.get(),
        "registry.upstreamprovider": provider.pk,
        "registry.upstreamconnection": connection.pk,
        "event": AuditEvent.objects.order_by("id").first(),
    }


@pytest.fixture
def browser(reviewer_user) -> Client:
    client = Client()
    client.force_login(reviewer_user)
    return client


def objects_by_model(world, reviewer_user) -> dict:
    return {
        "auth.user": reviewer_user.pk,
        "registry.agent": world["agent"].pk,
        "registry.apitoken": world["token"].pk,
        "registry.role": world["role"].pk,
        "registry.auditevent": world["event"].pk,
        "registry.mcpserver": world["server"].pk,
        "registry.ratelimitrule": world["rule"].pk,
        "registry.guard": world["guard"].pk,
        "registry.toolset": world["toolset"].pk,
        "registry.tool": world["tool"].pk,
        "executions.execution": world["done"].pk,
        "executions.approval": world["approval"].pk,
        **{label: pk for label, pk in world.items() if "." in label},
    }


def admin_urls(model, object_id):
    info = model._meta.app_label, model._meta.model_name
    return {
        "changelist": reverse("admin:{}_{}_changelist".format(*info)),
        "add": reverse("admin:{}_{}_add".format(*info)),
        "change": reverse("admin:{}_{}_change".format(*info), args=[object_id]),
        "delete": reverse("admin:{}_{}_delete".format(*info), args=[object_id]),
        "history": reverse("admin:{}_{}_history".format(*info), args=[object_id]),
    }


def snapshot():
    """Everything a write could touch, to compare before and after."""
    return {
        "tools": list(Tool.objects.order_by("pk").values()),
        "agents": list(Agent.objects.order_by("pk").values()),
        "tokens": list(ApiToken.objects.order_by("pk").values()),
        "servers": list(MCPServer.objects.order_by("pk").values()),
        "rules": list(RateLimitRule.objects.order_by("pk").values()),
        "guards": list(Guard.objects.order_by("pk").values()),
        "toolsets": list(Toolset.objects.order_by("pk").values()),
        "approvals": list(Approval.objects.order_by("pk").values()),
        "executions": list(Execution.objects.order_by("pk").values("pk", "status")),
    }


def test_the_reviewer_sees_every_admin_page_without_a_save_button(world, browser, reviewer_user):
    by_label = objects_by_model(world, reviewer_user)
    registered = {model._meta.label_lower: model for model in admin.site._registry}
    assert set(registered) == set(by_label), "a new admin page needs a row here"
    index = browser.get(reverse("admin:index"))
    assert index.status_code == 200
    for name in ("Executions", "Approvals", "Audit events", "Tools", "Agents"):
        assert name.encode() in index.content, name
    for label, model in registered.items():
        urls = admin_urls(model, by_label[label])
        listing = browser.get(urls["changelist"])
        assert listing.status_code == 200, label
        detail = browser.get(urls["change"])
        assert detail.status_code == 200, label
        html = detail.content.decode()
        for button in ('name="_save"', 'name="_continue"', 'name="_addanother"'):
            assert button not in html, (label, button)
        assert browser.get(urls["history"]).status_code == 200, label
        for page in (listing, detail):
            text = page.content.decode()
            assert CANARY not in text and MCP_CANARY not in text, label


KNOWN_WRITE_HOLES: set[tuple[str, str]] = set()


def test_every_admin_write_is_refused(world, browser, reviewer_user):
    by_label = objects_by_model(world, reviewer_user)
    before = snapshot()
    for model in admin.site._registry:
        label = model._meta.label_lower
        urls = admin_urls(model, by_label[label])
        for kind in ("add", "change", "delete"):
            if (label, kind) in KNOWN_WRITE_HOLES:
                continue
            response = browser.post(urls[kind], {"post": "yes", "name": "x", "action": "x"})
            assert response.status_code == 403, (label, kind, response.status_code)
        assert browser.get(urls["add"]).status_code == 403, label
        assert browser.get(urls["delete"]).status_code == 403, label
    assert snapshot() == before


def test_the_reviewer_cannot_issue_tokens_from_the_token_add_page(world, browser, reviewer_user):
    root = make_user("root-victim", is_superuser=True, is_staff=True)
    response = browser.post(
        reverse("admin:registry_apitoken_add"),
        {"user": root.pk, "name": "stolen", "expires_in_days": 1},
    )
    assert response.status_code == 403
    assert not ApiToken.objects.filter(user=root).exists()


def post_action(browser, changelist: str, action: str, ids: list) -> None:
    browser.post(changelist, {"action": action, "_selected_action": ids, "index": 0})


def test_no_admin_action_changes_anything(world, browser):
    before = snapshot()
    post_action(
        browser,
        reverse("admin:registry_tool_changelist"),
        "deactivate_tools",
        [world["tool"].pk],
    )
    for action in ("issue_token", "deactivate_agents"):
        post_action(
            browser, reverse("admin:registry_agent_changelist"), action, [world["agent"].pk]
        )
    for action in ("disable_servers", "sync_tools_now"):
        post_action(
            browser, reverse("admin:registry_mcpserver_changelist"), action, [world["server"].pk]
        )
    connection = world["registry.upstreamconnection"]
    post_action(
        browser, reverse("admin:registry_upstreamconnection_changelist"), "revoke", [connection]
    )
    assert snapshot() == before
    assert UpstreamConnection.objects.get(pk=connection).revoked_at is None


def test_the_reviewer_cannot_revoke_tokens(world, browser):
    post_action(
        browser, reverse("admin:registry_apitoken_changelist"), "revoke_tokens", [world["token"].pk]
    )
    world["token"].refresh_from_db()
    assert world["token"].revoked_at is None


def test_the_reviewer_may_export_from_the_admin(world, browser):
    response = browser.post(
        reverse("admin:executions_execution_changelist"),
        {"action": "export_selected_jsonl", "_selected_action": [world["done"].pk], "index": 0},
    )
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [row["id"] for row in rows] == [str(world["done"].pk)]
    for model in ("executions_execution", "registry_auditevent"):
        assert browser.get(reverse(f"admin:{model}_export", args=["csv"])).status_code == 200


def test_the_approval_queue_refuses_the_reviewer(world, browser):
    queue = reverse("admin:executions_approval_queue")
    page = browser.get(queue)
    assert page.status_code == 200 and world["tool"].name.encode() in page.content
    browser.post(queue, {"approval_id": world["approval"].pk, "decision": "approve"})
    browser.post(queue, {"approval_id": world["approval"].pk, "decision": "reject", "reason": "x"})
    world["approval"].refresh_from_db()
    assert world["approval"].status == "pending"


def test_the_test_run_refuses_to_run(world, browser):
    url = reverse("admin:registry_tool_test_run", args=[world["tool"].pk])
    page = browser.get(url)
    assert page.status_code == 200 and b"may read this tool but not execute it" in page.content
    refused = browser.post(url, {"arguments": '{"q": "hi"}', "wait_seconds": 1})
    assert refused.status_code == 200 and b"permission_denied" in refused.content
    mine = Execution.objects.filter(principal_name="rita-reviewer")
    assert [(e.status, e.reason_code) for e in mine] == [("denied", "permission_denied")]


def test_dashboard_is_open_and_the_import_page_is_not(world, browser):
    assert browser.get(reverse("toolhub-dashboard")).status_code == 200
    assert browser.get(reverse("admin:registry_tool_import")).status_code == 403


# The API: every read 200, every write 403.

READS = """
/tools
/tools/{T}
/tools/{T}/schema
/tools/{T}/parameters
/tools/parameters/{P}
/tools/{T}/configs
/tools/{T}/configs/api_key
/roles
/roles/{R}
/agents
/agents/{A}
/agents/{A}/tokens
/permissions
/permissions/{G}
/permissions/tool/{T}
/permissions/role/{R}
/registry/me
/registry/by-role/{R}
/registry/by-role-name/readers
/registry/check-permission/{T}/{R}
/mcp-servers
/mcp-servers/{M}
/rate-limits
/rate-limits/{L}
/executions
/executions/tool/{T}
/executions/{E}
/executions/{E}/output
/executions/export?format=csv
/approvals
/approvals/{AP}
/stats
/audit
/audit/export?format=jsonl
/audit/verify
/audit/head
"""

WRITES = [
    ("POST", "/tools", {"name": "brand_new_tool", "type": "http"}),
    ("PUT", "/tools/{T}", {"name": "reviewed_tool", "type": "http", "description": "x"}),
    ("PATCH", "/tools/{T}", {"description": "changed"}),
    ("DELETE", "/tools/{T}", None),
    ("DELETE", "/tools/{T}?hard_delete=true", None),
    ("POST", "/tools/{T}/parameters", {"name": "extra"}),
    ("PUT", "/tools/parameters/{P}", {"name": "q", "type": "integer"}),
    ("PATCH", "/tools/parameters/{P}", {"description": "changed"}),
    ("DELETE", "/tools/parameters/{P}", None),
    ("POST", "/tools/{T}/configs", {"config_key": "new_key", "config_value": 1}),
    ("DELETE", "/tools/{T}/configs/api_key", None),
    ("POST", "/tools/import", {"content": "tools: []"}),
    ("POST", "/roles", {"name": "brand-new-role"}),
    ("PATCH", "/roles/{R}", {"description": "changed"}),
    ("DELETE", "/roles/{R}", None),
    ("POST", "/agents", {"name": "brand-new-agent", "owner": "owner-olga"}),
    ("PATCH", "/agents/{A}", {"description": "changed"}),
    ("DELETE", "/agents/{A}", None),
    ("POST", "/agents/{A}/tokens", {"name": "stolen"}),
    ("DELETE", "/agents/{A}/tokens/{AT}", None),
    ("POST", "/permissions", {"tool_id": "{T}", "role_id": "{R}", "action": "manage"}),
    ("POST", "/permissions/bulk", {"tool_id": "{T}", "role_ids": ["{R}"], "action": "manage"}),
    ("DELETE", "/permissions/{G}", None),
    ("POST", "/mcp-servers", {"name": "new_mcp", "transport": "sse", "url": "http://x.example"}),
    ("PUT", "/mcp-servers/{M}", {"name": "reviewed_mcp", "transport": "sse", "url": "http://x"}),
    ("PATCH", "/mcp-servers/{M}", {"description": "changed"}),
    ("DELETE", "/mcp-servers/{M}", None),
    ("POST", "/mcp-servers/{M}/sync", None),
    ("POST", "/rate-limits", {"scope": "global", "max_requests": 1, "time_window_seconds": 1}),
    ("PUT", "/rate-limits/{L}", {"scope": "global", "max_requests": 1, "time_window_seconds": 1}),
    ("PATCH", "/rate-limits/{L}", {"max_requests": 1}),
    ("DELETE", "/rate-limits/{L}", None),
    ("POST", "/executions", {"tool_id": "{T}", "input_data": {"q": "x"}}),
    ("POST", "/executions/{E}/cancel", None),
    ("POST", "/approvals/{AP}/approve", {}),
    ("POST", "/approvals/{AP}/reject", {"reason": "no"}),
]
KNOWN_API_HOLES: set[tuple[str, str]] = set()


def ids_of(world) -> dict[str, str]:
    return {
        "{T}": str(world["tool"].pk),
        "{P}": str(world["parameter"].pk),
        "{R}": str(world["role"].pk),
        "{A}": str(world["agent"].pk),
        "{AT}": str(world["token"].pk),
        "{G}": str(world["grant"].pk),
        "{M}": str(world["server"].pk),
        "{L}": str(world["rule"].pk),
        "{E}": str(world["pending"].pk),
        "{AP}": str(world["approval"].pk),
    }


def fill(value, ids):
    if isinstance(value, str):
        for key, real in ids.items():
            value = value.replace(key, real)
        return value
    if isinstance(value, list):
        return [fill(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    return value


def test_every_api_read_is_allowed(world, reviewer_client):
    ids = ids_of(world)
    failures = []
    for path in READS.split():
        response = reviewer_client.get("/api/v1" + fill(path, ids))
        if path == "/executions/{E}/output":
            # {E} awaits approval: the read is allowed and says there is no output yet.
            if response.status_code != 404 or response.json()["error"]["code"] != "no_output":
                failures.append((path, response.status_code, response.content[:200]))
        elif response.status_code != 200:
            failures.append((path, response.status_code, response.content[:200]))
        elif not path.startswith(("/executions/export", "/audit/export")):
            assert CANARY not in response.content.decode(), path
            assert MCP_CANARY not in response.content.decode(), path
    assert not failures, failures


def test_every_api_write_is_refused(world, reviewer_client):
    ids = ids_of(world)
    before = snapshot()
    failures = []
    for method, path, body in WRITES:
        if (method, path) in KNOWN_API_HOLES:
            continue
        savepoint = transaction.savepoint()
        try:
            response = reviewer_client.generic(
                method,
                "/api/v1" + fill(path, ids),
                data=None if body is None else json.dumps(fill(body, ids)),
                content_type="application/json",
            )
        finally:
            transaction.savepoint_rollback(savepoint)
        if response.status_code != 403:
            failures.append((method, path, response.status_code, response.content[:200]))
        else:
            assert response.json()["error"]["code"], (method, path)
    assert not failures, failures
    # Refused calls are recorded as denied executions; nothing else may change.
    after = snapshot()
    after["executions"] = [
        e for e in after["executions"] if e["pk"] in {row["pk"] for row in before["executions"]}
    ]
    assert after == before


def test_the_reviewer_cannot_cancel_a_call(world, reviewer_client):
    response = reviewer_client.post(f"/api/v1/executions/{world['pending'].pk}/cancel")
    assert response.status_code == 403
    world["pending"].refresh_from_db()
    assert world["pending"].status == "pending_approval"


def test_reviewer_permissions_are_a_role_not_a_superuser(reviewer_user):
    assert not reviewer_user.is_superuser and reviewer_user.is_staff
    for label in role_services.REVIEWER_PERMISSIONS:
        assert reviewer_user.has_perm(label), label
    for codename in ("change", "add", "delete"):
        for model in ("tool", "agent", "apitoken", "auditevent"):
            assert not reviewer_user.has_perm(f"registry.{codename}_{model}")
    assert not reviewer_user.has_perm("registry.grant_tool")
    other = make_user("unrelated")
    other.groups.add(make_role("nothing"))
    assert token_client(other).get("/api/v1/audit").status_code == 403


@pytest.mark.parametrize("approval_id", ["", "not-a-uuid", "-1", "9" * 40, "ü"])
def test_the_approval_queue_answers_bad_ids_without_an_error_page(world, browser, approval_id):
    queue = reverse("admin:executions_approval_queue")
    response = browser.post(queue, {"approval_id": approval_id, "decision": "approve"})
    assert response.status_code == 302


def test_the_approval_queue_refuses_an_unknown_decision(world, browser):
    queue = reverse("admin:executions_approval_queue")
    response = browser.post(
        queue, {"approval_id": world["approval"].pk, "decision": "APPROVE", "reason": "ok"}
    )
    assert response.status_code == 302
    page = browser.get(queue).content.decode()
    assert "Choose approve or reject" in page
    world["approval"].refresh_from_db()
    assert world["approval"].status == "pending"
