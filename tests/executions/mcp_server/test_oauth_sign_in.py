"""OAuth 2.1 sign-in at /mcp: a client registers (RFC 7591), a person signs in and consents,
the client gets a token for one resource and acts for the person, governed and recorded.

Driven over HTTP against the live ToolHub (two uvicorn processes, a Celery worker); the
MCP side with the official SDK client holding the OAuth access token.
"""

from __future__ import annotations

import json
import re
import time
from html import unescape

import anyio
import httpx
import pytest
from django.contrib.auth.models import Permission
from django.db import close_old_connections
from jwcrypto import jwk, jwt
from oauth2_provider.models import Application

from executions.models import Approval, Execution
from executions.services.approvals import approval_decide
from registry.models import AuditEvent, Consent
from registry.services import consents as consent_services
from registry.services import limits as limit_services
from tests.executions.mcp_server.conftest import all_tools, mcp_client, rpc
from tests.executions.mcp_server.oauth_flow import (
    REDIRECT,
    Person,
    exchange,
    redirected,
    register,
    token,
)
from tests.factories import make_user
from toolhub.exceptions import PermissionDenied

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def person(world):
    alice = make_user("alice-person")
    alice.groups.add(world.role)  # the same rights as the world's agent: alpha, bravo, charlie
    return alice


@pytest.fixture
def signed_in(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    alice = Person(base, person.username)
    page, verifier = alice.authorize(client["client_id"], world.url)
    assert page.status_code == 200, page.text[:800]
    granted = redirected(alice.allow(page))
    tokens = exchange(base, client["client_id"], granted, verifier)
    assert tokens.status_code == 200, tokens.text
    return {"base": base, "client": client, "alice": alice, "tokens": tokens.json(), **granted}


def test_the_metadata_leads_a_client_from_the_401_to_the_authorization_server(world):
    base = world.url.rsplit("/mcp", 1)[0]
    response, _ = rpc(world.url, None, "tools/list")
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge)[1]
    resource = httpx.get(metadata_url, timeout=10).json()
    assert resource["resource"] == world.url
    assert resource["authorization_servers"] == [base]
    assert set(resource["scopes_supported"]) == {"tools:read", "tools:call"}
    server = httpx.get(base + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert server["issuer"] == base
    assert server["authorization_endpoint"] == base + "/oauth/authorize/"
    assert server["token_endpoint"] == base + "/oauth/token/"
    assert server["registration_endpoint"] == base + "/oauth/register/"
    assert server["revocation_endpoint"] == base + "/oauth/revoke_token/"
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["response_types_supported"] == ["code"]
    assert server["authorization_response_iss_parameter_supported"] is True
    assert "implicit" not in server["grant_types_supported"]
    assert "password" not in server["grant_types_supported"]


def test_the_consent_page_names_the_client_where_it_returns_the_person_and_what_it_may_do(
    world, person
):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    page, _ = Person(base, person.username).authorize(client["client_id"], world.url)
    assert page.status_code == 200
    text = unescape(page.text)
    assert "Desk Assistant" in text
    assert "127.0.0.1:8765" in text  # where the redirect goes
    assert person.username in text
    assert "every tool you may run" in text
    assert "Run those tools for you" in text
    assert not Consent.objects.exists()  # nothing is remembered before the person answers


def test_a_client_signs_in_for_a_person_and_its_calls_are_recorded_as_theirs(
    world, person, signed_in
):
    assert signed_in["iss"] == signed_in["base"]  # RFC 9207
    assert signed_in["state"] == "state-1"
    access = signed_in["tokens"]["access_token"]
    assert access.startswith("tho_")

    async def scenario():
        async with mcp_client(world.url, access) as client:
            listed = {tool.name for tool in (await all_tools(client))[0]}
            result = await client.call_tool("alpha", {"path": "x"})
            return listed, result

    listed, result = anyio.run(scenario)
    assert {"alpha", "bravo", "charlie"} <= listed
    assert "echo_hidden" not in listed
    assert not result.is_error, result
    close_old_connections()
    execution = Execution.objects.filter(tool_name="alpha").latest("created_at")
    assert execution.principal_id == person.pk
    assert execution.agent_id is None
    assert execution.oauth_client_id == signed_in["client"]["client_id"]
    assert execution.oauth_client_name == "Desk Assistant"
    event = AuditEvent.objects.filter(action="execution.succeeded").latest("occurred_at")
    assert event.after["admitted"]["oauth_client_id"] == signed_in["client"]["client_id"]
    issued = AuditEvent.objects.get(action="oauth.token_issued")
    assert issued.after["person"] == person.username
    assert access not in str(issued.after)
    assert AuditEvent.objects.filter(action="oauth.consent_given").count() == 1


def test_a_token_for_one_resource_is_refused_at_another(world, signed_in):
    access = signed_in["tokens"]["access_token"]
    response, _ = rpc(signed_in["base"] + "/mcp/some-toolset", access, "tools/list")
    assert response.status_code == 401
    assert "invalid_token" in response.headers["www-authenticate"]
    assert "/mcp" in response.json()["error_description"]
    rest = httpx.get(
        signed_in["base"] + "/api/v1/registry/me",
        headers={"Authorization": f"Bearer {access}"},
        timeout=10,
    )
    assert rest.status_code == 401


def test_a_scope_the_person_did_not_give_is_refused_with_the_scope_named(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    alice = Person(base, person.username)
    page, verifier = alice.authorize(client["client_id"], world.url, scope="tools:read")
    granted = redirected(alice.allow(page))
    access = exchange(base, client["client_id"], granted, verifier).json()["access_token"]
    listed, _ = rpc(world.url, access, "tools/list")
    assert listed.status_code == 200
    response, _ = rpc(world.url, access, "tools/call", {"name": "alpha", "arguments": {}})
    assert response.status_code == 403
    assert 'scope="tools:call"' in response.headers["www-authenticate"]
    close_old_connections()
    assert not Execution.objects.filter(principal=person).exists()


def test_consent_is_remembered_and_revoking_it_refuses_the_next_call(world, person, signed_in):
    alice, client_id = signed_in["alice"], signed_in["client"]["client_id"]
    again, _ = alice.authorize(client_id, world.url)
    assert "code" in redirected(again)  # no page: the consent covers it
    access = signed_in["tokens"]["access_token"]
    listed, _ = rpc(world.url, access, "tools/list")
    assert listed.status_code == 200
    page = alice.http.get("/oauth/connections/")
    assert "Desk Assistant" in page.text
    consent = Consent.objects.get(person=person, revoked_at__isnull=True)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    revoked = alice.http.post(
        f"/oauth/connections/{consent.pk}/revoke/", data={"csrfmiddlewaretoken": csrf}
    )
    assert revoked.status_code == 302
    response, _ = rpc(world.url, access, "tools/list")
    assert response.status_code == 401
    refreshed = token(
        signed_in["base"],
        grant_type="refresh_token",
        refresh_token=signed_in["tokens"]["refresh_token"],
        client_id=client_id,
    )
    assert refreshed.status_code == 400
    assert AuditEvent.objects.filter(action="oauth.consent_revoked").count() == 1
    page, _ = alice.authorize(client_id, world.url)
    assert page.status_code == 200  # asked again


def test_a_refresh_token_rotates_and_one_used_twice_revokes_the_family(world, signed_in):
    base, client_id = signed_in["base"], signed_in["client"]["client_id"]
    first = signed_in["tokens"]["refresh_token"]
    rotated = token(base, grant_type="refresh_token", refresh_token=first, client_id=client_id)
    assert rotated.status_code == 200, rotated.text
    fresh = rotated.json()
    assert fresh["refresh_token"] != first
    ok, _ = rpc(world.url, fresh["access_token"], "tools/list")
    assert ok.status_code == 200
    replayed = token(base, grant_type="refresh_token", refresh_token=first, client_id=client_id)
    assert replayed.status_code == 400
    refused, _ = rpc(world.url, fresh["access_token"], "tools/list")
    assert refused.status_code == 401  # the whole family went


def test_a_revoked_access_token_is_refused_on_the_next_call(world, signed_in):
    access = signed_in["tokens"]["access_token"]
    revoked = httpx.post(
        signed_in["base"] + "/oauth/revoke_token/",
        data={"token": access, "client_id": signed_in["client"]["client_id"]},
        timeout=10,
    )
    assert revoked.status_code == 200
    response, _ = rpc(world.url, access, "tools/list")
    assert response.status_code == 401


def test_a_code_replayed_or_a_wrong_verifier_gets_no_token(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    alice = Person(base, person.username)
    page, verifier = alice.authorize(client["client_id"], world.url)
    granted = redirected(alice.allow(page))
    common = {"grant_type": "authorization_code", "redirect_uri": REDIRECT}
    wrong = token(
        base, **common, code=granted["code"], client_id=client["client_id"], code_verifier="x" * 50
    )
    assert wrong.status_code == 400
    assert wrong.json()["error"] == "invalid_grant"
    page, verifier = alice.authorize(client["client_id"], world.url)
    granted = redirected(page)  # remembered consent: the code comes at once
    once = dict(common, code=granted["code"], client_id=client["client_id"], code_verifier=verifier)
    assert token(base, **once).status_code == 200
    replay = token(base, **once)
    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
        ({"resource": None}, "invalid_target"),
    ],
)
def test_a_bad_authorization_request_is_refused_back_to_the_client(world, person, extra, error):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    alice = Person(base, person.username)
    resource = extra.pop("resource", world.url)
    if "code_challenge_method" in extra:
        extra["code_challenge"] = "x" * 43
    response, _ = alice.authorize(client["client_id"], resource or "", **extra)
    answer = redirected(response)
    assert answer["error"] == error, answer
    assert answer["state"] == "state-1"
    assert answer.get("iss") == base  # RFC 9207 on errors too
    assert not Consent.objects.exists()


def test_a_redirect_uri_the_client_did_not_register_is_refused_without_redirecting(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    alice = Person(base, person.username)
    response, _ = alice.authorize(
        client["client_id"], world.url, redirect_uri="http://127.0.0.1:1/x"
    )
    assert response.status_code == 400
    assert "127.0.0.1:1" not in response.headers.get("location", "")


def test_a_plain_http_redirect_to_another_host_is_refused(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base, redirect_uris=["http://evil.example/callback"])
    alice = Person(base, person.username)
    response, _ = alice.authorize(
        client["client_id"], world.url, redirect_uri="http://evil.example/callback"
    )
    assert response.status_code == 400
    assert "evil.example" not in response.headers.get("location", "")


def test_the_person_a_call_was_made_for_may_not_approve_it(
    world, person, signed_in, approvers_role
):
    person.groups.add(approvers_role)  # alice may approve the gated tool's calls, not her own
    refusals = []

    def alice_then_the_approver():
        deadline = time.monotonic() + 20
        try:
            while time.monotonic() < deadline:
                approval = Approval.objects.filter(execution__tool=world.gated).first()
                if approval is not None:
                    try:
                        approval_decide(actor=person, approval=approval, approve=True)
                    except PermissionDenied as exc:
                        refusals.append(exc.code)
                    approval_decide(actor=world.approver, approval=approval, approve=True)
                    return
                time.sleep(0.2)
        finally:
            close_old_connections()

    async def scenario():
        async with mcp_client(world.url, signed_in["tokens"]["access_token"]) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, alice_then_the_approver)
                return await client.call_tool("golf_gated", {"path": "for-alice"})

    result = anyio.run(scenario)
    assert refusals == ["four_eyes"]
    assert not result.is_error, result
    close_old_connections()
    execution = Execution.objects.get(tool=world.gated)
    assert execution.principal_id == person.pk
    assert execution.approval.decided_by_id == world.approver.pk


def test_a_per_user_limit_counts_each_persons_calls_through_a_client_apart(
    world, person, signed_in
):
    limit_services.rate_limit_create(
        actor=None,
        tool=world.tools["bravo"],
        scope="user",
        max_requests=1,
        time_window_seconds=3600,
    )
    access = signed_in["tokens"]["access_token"]
    first, _ = rpc(world.url, access, "tools/call", {"name": "bravo", "arguments": {"path": "a"}})
    _, second = rpc(world.url, access, "tools/call", {"name": "bravo", "arguments": {"path": "b"}})
    assert first.status_code == 200
    assert second[-1]["result"]["isError"] is True
    close_old_connections()
    refused = Execution.objects.filter(principal=person, tool_name="bravo").latest("created_at")
    assert refused.reason_code == "rate_limited"
    assert refused.oauth_client_id == signed_in["client"]["client_id"]

    async def agents_call():  # the agent (another principal) still has its own room
        async with mcp_client(world.url, world.token) as client:
            return await client.call_tool("bravo", {"path": "agent"})

    assert not anyio.run(agents_call).is_error


def test_the_admin_finds_a_call_by_its_client_and_shows_the_client(
    world, person, signed_in, superuser
):
    rpc(
        world.url,
        signed_in["tokens"]["access_token"],
        "tools/call",
        {"name": "alpha", "arguments": {"path": "e"}},
    )
    close_old_connections()
    execution = Execution.objects.filter(principal=person).latest("created_at")
    from django.test import Client

    admin = Client()
    admin.force_login(superuser)
    client_id = signed_in["client"]["client_id"]
    listed = admin.get("/admin/executions/execution/", {"oauth_client": client_id})
    assert str(execution.pk)[:8] in listed.content.decode()
    assert (
        admin.get("/admin/executions/execution/", {"oauth_client": "someone-else"})
        .content.decode()
        .count(str(execution.pk)[:8])
        == 0
    )
    page = admin.get(f"/admin/executions/execution/{execution.pk}/change/").content.decode()
    assert client_id in page and "Desk Assistant" in page


def test_a_token_for_the_rest_api_discovers_and_calls_there_and_nothing_else(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    alice = Person(base, person.username)
    page, verifier = alice.authorize(client["client_id"], base + "/api/v1")
    assert "REST API" in unescape(page.text)
    granted = redirected(alice.allow(page))
    access = exchange(base, client["client_id"], granted, verifier).json()["access_token"]
    api = httpx.Client(
        base_url=base + "/api/v1", headers={"Authorization": f"Bearer {access}"}, timeout=30
    )
    listed = api.get("/registry/me").json()["name_map"].values()
    names = {entry["tool_name"] for entry in listed}
    assert {"alpha", "bravo", "charlie"} <= names
    called = api.post(
        "/executions", json={"tool": "alpha", "input_data": {"path": "r"}, "wait": True}
    )
    assert called.status_code in (200, 202), called.text
    assert called.json()["oauth_client_id"] == client["client_id"]
    assert api.get(f"/executions/{called.json()['id']}").status_code == 200
    refused = api.get("/agents")
    assert refused.status_code == 403
    assert "OAuth token" in refused.json()["error"]["message"]
    at_mcp, _ = rpc(world.url, access, "tools/list")
    assert at_mcp.status_code == 401  # a token for the REST API is not one for /mcp


def _confidential_client(user, secret: str) -> Application:
    return Application.objects.create(
        name="Nightly batch",
        user=user,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
        client_secret=secret,
    )


def test_a_headless_agent_gets_a_token_with_client_credentials_and_calls_as_itself(world):
    base = world.url.rsplit("/mcp", 1)[0]
    client = _confidential_client(world.agent.user, "cc-secret-1")
    answer = token(
        base,
        grant_type="client_credentials",
        client_id=client.client_id,
        client_secret="cc-secret-1",
        resource=world.url,
    )
    assert answer.status_code == 200, answer.text
    assert "refresh_token" not in answer.json()
    access = answer.json()["access_token"]
    _, messages = rpc(
        world.url, access, "tools/call", {"name": "alpha", "arguments": {"path": "c"}}
    )
    assert not messages[-1]["result"].get("isError"), messages
    close_old_connections()
    execution = Execution.objects.filter(tool_name="alpha").latest("created_at")
    assert execution.agent_id == world.agent.pk  # the agent itself, as its static token would
    assert execution.oauth_client_name == "Nightly batch"
    issued = AuditEvent.objects.filter(action="oauth.token_issued").latest("occurred_at")
    assert issued.after["grant_type"] == "client_credentials"
    assert issued.after["person"] is None


def test_client_credentials_are_refused_to_a_client_that_is_no_agents_or_names_no_resource(
    world, person
):
    base = world.url.rsplit("/mcp", 1)[0]
    persons_client = _confidential_client(person, "cc-secret-2")
    refused = token(
        base,
        grant_type="client_credentials",
        client_id=persons_client.client_id,
        client_secret="cc-secret-2",
        resource=world.url,
    )
    assert refused.status_code in (400, 401)
    assert refused.json()["error"] == "unauthorized_client"
    agents_client = _confidential_client(world.agent.user, "cc-secret-3")
    no_resource = token(
        base,
        grant_type="client_credentials",
        client_id=agents_client.client_id,
        client_secret="cc-secret-3",
    )
    assert no_resource.status_code == 400
    assert no_resource.json()["error"] == "invalid_target"
    assert not AuditEvent.objects.filter(action="oauth.token_issued").exists()


def _signed_in_at(world, person, resource: str, scope="tools:read tools:call") -> tuple:
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    alice = Person(base, person.username)
    page, verifier = alice.authorize(client["client_id"], resource, scope=scope)
    granted = redirected(alice.allow(page) if page.status_code == 200 else page)
    tokens = exchange(base, client["client_id"], granted, verifier).json()
    return base, client, alice, tokens


def test_a_resource_written_with_a_trailing_slash_is_still_revoked_with_its_consent(world, person):
    _, _, _, tokens = _signed_in_at(world, person, world.url + "/")
    listed, _ = rpc(world.url, tokens["access_token"], "tools/list")
    assert listed.status_code == 200
    consent = Consent.objects.get(person=person, revoked_at__isnull=True)
    assert consent.resource == world.url
    consent_services.consent_revoke(actor=person, consent=consent)
    refused, _ = rpc(world.url, tokens["access_token"], "tools/list")
    assert refused.status_code == 401


def test_a_narrower_consent_ends_the_wider_tokens(world, person):
    base, client, alice, wide = _signed_in_at(world, person, world.url)
    page, verifier = alice.authorize(
        client["client_id"], world.url, scope="tools:read", prompt="consent"
    )
    assert page.status_code == 200  # asked again: the person now allows less
    granted = redirected(alice.allow(page))
    narrow = exchange(base, client["client_id"], granted, verifier).json()
    call = {"name": "alpha", "arguments": {"path": "w"}}
    assert rpc(world.url, wide["access_token"], "tools/call", call)[0].status_code == 401
    assert rpc(world.url, narrow["access_token"], "tools/call", call)[0].status_code == 403
    assert rpc(world.url, narrow["access_token"], "tools/list")[0].status_code == 200


def test_a_client_of_a_reviewer_sees_only_the_calls_it_made(world, person):
    person.user_permissions.add(Permission.objects.get(codename="review_all"))
    agents_call, _ = rpc(
        world.url, world.token, "tools/call", {"name": "alpha", "arguments": {"path": "a"}}
    )
    assert agents_call.status_code == 200
    base, _, _, tokens = _signed_in_at(world, person, world.url.rsplit("/mcp", 1)[0] + "/api/v1")
    api = httpx.Client(
        base_url=base + "/api/v1",
        headers={"Authorization": f"Bearer {tokens['access_token']}"},
        timeout=30,
    )
    mine = api.post(
        "/executions", json={"tool": "alpha", "input_data": {"path": "m"}, "wait": True}
    )
    listed = api.get("/executions").json()["results"]
    assert [e["id"] for e in listed] == [mine.json()["id"]]
    close_old_connections()
    others = Execution.objects.exclude(pk=mine.json()["id"]).first()
    assert api.get(f"/executions/{others.pk}").status_code == 404


def test_a_method_that_is_not_text_is_refused_not_a_server_error(world, signed_in):
    response = httpx.post(
        world.url,
        json={"jsonrpc": "2.0", "id": 1, "method": ["tools/call"], "params": {}},
        headers={
            "Authorization": f"Bearer {signed_in['tokens']['access_token']}",
            "Accept": "application/json, text/event-stream",
        },
        timeout=20,
    )
    assert response.status_code < 500


def signed_in_with(world, person, scope: str, **extra) -> dict:
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    alice = Person(base, person.username)
    page, verifier = alice.authorize(client["client_id"], world.url, scope=scope, **extra)
    assert page.status_code == 200, page.text[:800]
    granted = redirected(alice.allow(page))
    tokens = exchange(base, client["client_id"], granted, verifier)
    assert tokens.status_code == 200, tokens.text
    return {"base": base, "client": client, "alice": alice, "tokens": tokens.json()}


def userinfo(base: str, access: str) -> httpx.Response:
    return httpx.get(
        base + "/oauth/userinfo/", headers={"Authorization": f"Bearer {access}"}, timeout=10
    )


def test_a_client_that_asks_for_openid_gets_an_id_token_signed_with_the_served_key(world, person):
    got = signed_in_with(world, person, "openid tools:call", nonce="n-0S6_WzA2Mj")
    base, client_id = got["base"], got["client"]["client_id"]
    discovery = httpx.get(base + "/.well-known/openid-configuration", timeout=10).json()
    server = httpx.get(base + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert discovery["issuer"] == server["issuer"] == base
    keys = jwk.JWKSet.from_json(httpx.get(discovery["jwks_uri"], timeout=10).text)
    verified = jwt.JWT(jwt=got["tokens"]["id_token"], key=keys, algs=["RS256"])
    claims = json.loads(verified.claims)
    assert json.loads(verified.header)["alg"] == "RS256"
    assert claims["iss"] == base
    assert claims["aud"] == client_id
    assert claims["sub"] == str(person.pk)
    assert claims["nonce"] == "n-0S6_WzA2Mj"
    assert claims["exp"] > time.time()
    assert "email" not in claims and "name" not in claims  # openid alone: who, not more
    listed, _ = rpc(world.url, got["tokens"]["access_token"], "tools/list")
    assert listed.status_code == 403  # openid gives no right there: listing takes tools:read
    assert 'scope="tools:read"' in listed.headers["www-authenticate"]


def test_a_client_that_does_not_ask_for_openid_gets_no_id_token(world, signed_in):
    assert "id_token" not in signed_in["tokens"]
    answer = userinfo(signed_in["base"], signed_in["tokens"]["access_token"])
    assert answer.status_code == 403
    assert answer.json()["error"] == "insufficient_scope"


def test_userinfo_answers_a_token_with_openid_whatever_resource_it_is_for(world, person):
    person.first_name, person.last_name, person.email = "Alice", "Liddell", "alice@example.com"
    person.save()
    got = signed_in_with(world, person, "openid profile email tools:read")
    answer = userinfo(got["base"], got["tokens"]["access_token"])
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "sub": str(person.pk),
        "name": "Alice Liddell",
        "given_name": "Alice",
        "family_name": "Liddell",
        "preferred_username": person.username,
        "email": "alice@example.com",
    }
    only_openid = signed_in_with(world, person, "openid tools:read")
    assert userinfo(got["base"], only_openid["tokens"]["access_token"]).json() == {
        "sub": str(person.pk)
    }
    claims = json.loads(
        jwt.JWT(jwt=got["tokens"]["id_token"], key=_served_keys(got["base"])).claims
    )
    assert claims["email"] == "alice@example.com" and claims["name"] == "Alice Liddell"


def _served_keys(base: str):
    return jwk.JWKSet.from_json(httpx.get(base + "/oauth/jwks/", timeout=10).text)


def test_userinfo_refuses_a_token_whose_consent_was_withdrawn(world, person):
    got = signed_in_with(world, person, "openid tools:read")
    access = got["tokens"]["access_token"]
    assert userinfo(got["base"], access).status_code == 200
    consent = Consent.objects.get(person=person, revoked_at__isnull=True)
    consent_services.consent_revoke(actor=person, consent=consent)
    refused = userinfo(got["base"], access)
    assert refused.status_code == 401
    assert "invalid_token" in refused.headers["www-authenticate"]


def test_the_consent_page_says_the_client_will_know_who_the_person_is(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    page, _ = Person(base, person.username).authorize(
        client["client_id"], world.url, scope="openid tools:read"
    )
    assert page.status_code == 200
    assert "Know who you are (your ToolHub user id)" in unescape(page.text)


@pytest.mark.parametrize(
    "scope", ["profile tools:read", "email", "openid nosuch"], ids=["no-openid", "bare", "unknown"]
)
def test_identity_scopes_come_with_openid_only(world, person, scope):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    response, _ = Person(base, person.username).authorize(
        client["client_id"], world.url, scope=scope
    )
    assert redirected(response)["error"] == "invalid_scope"


def test_prompt_none_without_a_consent_is_refused_with_consent_required(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = register(base)
    alice = Person(base, person.username)
    response, _ = alice.authorize(client["client_id"], world.url, scope="openid", prompt="none")
    answer = redirected(response)
    assert answer["error"] == "consent_required"
    assert answer["iss"] == base
    page, _ = alice.authorize(client["client_id"], world.url, scope="openid")
    assert "code" in redirected(alice.allow(page))
    again, _ = alice.authorize(client["client_id"], world.url, scope="openid", prompt="none")
    assert "code" in redirected(again)  # remembered: answered without a page
