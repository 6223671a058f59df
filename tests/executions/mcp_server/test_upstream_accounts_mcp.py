"""What an MCP client sees when a tool acts with its person's own upstream account and the
person has not connected one, and how the call goes on once they have.

The live ToolHub (two uvicorn processes, a Celery worker), a real OAuth server as the
upstream provider (oidc-provider) and the API the tool calls (it introspects the token
it gets); the official SDK client holds an OAuth access token acting for the person.

- A 2026-07-28 client that completes URL-mode elicitations gets ``input_required`` with
  an ``elicitation/create`` (mode ``url``) for the connect page; here its callback
  connects the person's account there (the page, the provider's sign-in, ToolHub's
  callback), and the SDK's retry is the call, admitted anew, acting as the person.
- A 2025-11-25 client that said at ``initialize`` it completes URL elicitations gets the
  ``-32042`` URL-elicitation-required error naming the URL.
- Any other client gets a tool result with ``isError`` naming the URL.
- An agent's own token gets a tool result saying an agent has no account.
"""

from __future__ import annotations

from datetime import timedelta

import anyio
import mcp_types as types
import pytest
from django.db import close_old_connections
from django.utils import timezone
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from oauth2_provider.models import AccessToken, Application, set_token_value

from executions.models import Execution
from registry.oauth.tokens import access_token
from registry.services import agents as agent_services
from registry.services import consents as consent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from registry.services import upstream as upstream_services
from tests.executions.mcp_server.conftest import mcp_client
from tests.factories import make_token, make_user
from tests.servers.upstream_accounts import (
    CLIENT_SECRET,
    connect,
    sign_in,
    upstream_api,
    upstream_idp,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def idp(live_toolhub, tmp_path_factory):
    callbacks = [
        f"http://127.0.0.1:{port}/accounts/upstream/acme/callback/" for port in live_toolhub.ports
    ]
    with upstream_idp(tmp_path_factory.mktemp("upstream-idp-mcp"), callbacks) as provider:
        yield provider


@pytest.fixture(scope="module")
def api(idp):
    with upstream_api(idp) as server:
        yield server


@pytest.fixture
def world(live_toolhub, idp, api, owner):
    idp.set_accounts("alice", "carol")
    api.seen.clear()
    upstream_services.upstream_provider_create(
        actor=None, client_secret=CLIENT_SECRET, **idp.provider_fields()
    )
    role = role_services.role_create(actor=None, name="acme-mcp-users")
    tool = tool_services.tool_create(
        actor=None,
        name="acme_whoami",
        type="http",
        timeout_seconds=10,
        parameters=[{"name": "path", "type": "string", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": api.url},
            {"config_key": "endpoint", "config_value": "/whoami/{path}"},
            {"config_key": "auth_type", "config_value": "caller_account"},
            {"config_key": "upstream_provider", "config_value": "acme"},
        ],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    people = {name: make_user(name) for name in ("alice", "carol")}
    for person in people.values():
        person.groups.add(role)
    agent = agent_services.agent_create(
        actor=None, name="acme-mcp-agent", owner=owner, role_ids=[role.pk]
    )
    client = Application.objects.create(
        name="Desk assistant",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/callback",
    )
    url = live_toolhub.url()
    base = url.rsplit("/mcp", 1)[0]
    return {
        "url": url,
        "base": base,
        "connect_url": f"{base}/accounts/upstream/acme/connect/",
        "people": people,
        "agent_token": make_token(agent.user),
        "client": client,
        "idp": idp,
        "api": api,
    }


def oauth_token(world, name: str) -> str:
    """An access token of the desk assistant acting for ``name`` at /mcp (with the consent
    the page would have left behind)."""
    consent_services.consent_give(
        person=world["people"][name],
        client=world["client"],
        resource=world["url"],
        scopes=["tools:read", "tools:call"],
    )
    token = AccessToken(
        user=world["people"][name],
        application=world["client"],
        expires=timezone.now() + timedelta(hours=1),
        scope="tools:read tools:call",
        resource=[world["url"]],
    )
    raw = access_token(None)
    set_token_value(token, raw)
    token.save()
    return raw


def executions_of(name: str) -> list[Execution]:
    close_old_connections()
    return list(Execution.objects.filter(principal_name=name).order_by("created_at"))


async def never_called(context, params):  # an elicitation callback: says URL mode is handled
    raise AssertionError("this client should not be asked to elicit")


def test_a_client_that_elicits_no_urls_gets_a_tool_error_naming_the_connect_url(world):
    token = oauth_token(world, "carol")

    async def run():
        async with mcp_client(world["url"], token, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            return await client.call_tool("acme_whoami", {"path": "me"})

    result = anyio.run(run)

    assert result.is_error
    assert world["connect_url"] in result.content[0].text
    error = result.structured_content["error"]
    assert error["code"] == "connection_required"
    assert error["connect_url"] == world["connect_url"]
    (execution,) = executions_of("carol")
    assert (execution.status, execution.reason_code) == ("denied", "connection_required")
    assert (execution.entry_point, execution.oauth_client_name) == ("mcp", "Desk assistant")
    assert str(execution.pk) == error["execution_id"]
    assert world["api"].seen == []


def test_a_2025_11_25_client_that_elicits_urls_gets_the_url_elicitation_error(world):
    token = oauth_token(world, "carol")

    async def run(**kw):
        async with mcp_client(world["url"], token, mode="legacy", **kw) as client:
            assert client.protocol_version == "2025-11-25"
            try:
                return await client.call_tool("acme_whoami", {"path": "me"})
            except MCPError as error:
                return error

    raised = anyio.run(lambda: run(elicitation_callback=never_called))
    assert isinstance(raised, MCPError) and raised.error.code == -32042
    asked = UrlElicitationRequiredError.from_error(raised.error)
    assert [e.url for e in asked.elicitations] == [world["connect_url"]]
    assert "Acme" in asked.elicitations[0].message
    # The same revision without URL elicitation: the tool error.
    plain = anyio.run(run)
    assert plain.is_error and world["connect_url"] in plain.content[0].text
    assert [e.reason_code for e in executions_of("carol")] == ["connection_required"] * 2


def test_a_2026_client_connects_through_the_url_elicitation_and_the_call_goes_on(world):
    asked: list[types.ElicitRequestURLParams] = []

    def connect_alice():
        browser = sign_in(world["base"], "alice")
        done = connect(browser, world["base"], world["idp"], "alice")
        assert done.response.status_code == 200, done.response.text[:500]

    async def elicit(context, params):
        asked.append(params)
        await anyio.to_thread.run_sync(connect_alice)  # the person opens the URL and connects
        return types.ElicitResult(action="accept")

    token = oauth_token(world, "alice")

    async def run():
        async with mcp_client(world["url"], token, mode="auto", elicitation_callback=elicit) as c:
            return await c.call_tool("acme_whoami", {"path": "me"})

    result = anyio.run(run)

    assert [(p.mode, p.url) for p in asked] == [("url", world["connect_url"])]
    assert not result.is_error, result.content
    assert result.structured_content["data"]["sub"] == "sub-alice"
    refused, ran = executions_of("alice")
    assert (refused.status, refused.reason_code) == ("denied", "connection_required")
    assert ran.status == "succeeded" and ran.upstream_connection_id is not None
    assert ran.protocol_version == "2026-07-28"


def test_an_agents_own_token_is_told_an_agent_has_no_account(world):
    async def run():
        async with mcp_client(world["url"], world["agent_token"], mode="auto") as client:
            return await client.call_tool("acme_whoami", {"path": "me"})

    result = anyio.run(run)

    assert result.is_error
    assert "an agent has no such account" in result.content[0].text
    assert result.structured_content["error"]["code"] == "person_required"
    assert world["api"].seen == []
