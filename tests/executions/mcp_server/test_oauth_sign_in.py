"""OAuth 2.1 sign-in at /mcp: a client registers (RFC 7591), a person signs in and consents,
the client gets a token for one resource and acts for the person, governed and recorded.

Driven over HTTP against the live ToolHub (two uvicorn processes, a Celery worker); the
MCP side with the official SDK client holding the OAuth access token.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from html import unescape
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest
from django.db import close_old_connections

from executions.models import Execution
from registry.models import AuditEvent, Consent
from tests.executions.mcp_server.conftest import all_tools, mcp_client, rpc
from tests.factories import make_user

REDIRECT = "http://127.0.0.1:8765/callback"
pytestmark = pytest.mark.django_db(transaction=True)


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    return verifier, challenge.decode()


class Person:
    """A browser-like session of one person at the live ToolHub."""

    def __init__(self, base: str, username: str):
        self.base = base
        self.http = httpx.Client(base_url=base, timeout=20, follow_redirects=False)
        page = self.http.get("/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        signed = self.http.post(
            "/accounts/login/",
            data={"username": username, "password": "pw-" + username, "csrfmiddlewaretoken": csrf},
        )
        assert signed.status_code == 302, signed.text[:500]

    def authorize(self, client_id: str, resource: str, *, scope="tools:read tools:call", **extra):
        verifier, challenge = _pkce()
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "state-1",
            "scope": scope,
            "resource": resource,
            **extra,
        }
        return self.http.get("/oauth/authorize/", params=params), verifier

    def allow(self, page: httpx.Response) -> httpx.Response:
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
        fields = {name: unescape(value) for name, value in fields.items()}
        return self.http.post("/oauth/authorize/", data={**fields, "allow": "Allow"})


def _code(response: httpx.Response) -> dict:
    assert response.status_code == 302, response.text[:500]
    location = response.headers["location"]
    assert location.startswith(REDIRECT), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def _register(base: str, **extra) -> dict:
    answer = httpx.post(
        base + "/oauth/register/",
        json={
            "client_name": "Desk Assistant",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **extra,
        },
        timeout=20,
    )
    assert answer.status_code == 201, answer.text
    return answer.json()


def _token(base: str, **data) -> httpx.Response:
    return httpx.post(base + "/oauth/token/", data=data, timeout=20)


def _exchange(base: str, client_id: str, granted: dict, verifier: str) -> httpx.Response:
    """The code of ``granted`` (the redirect's query) for tokens, with its PKCE verifier."""
    return _token(
        base,
        grant_type="authorization_code",
        code=granted["code"],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=verifier,
    )


@pytest.fixture
def person(world):
    alice = make_user("alice-person")
    alice.groups.add(world.role)  # the same rights as the world's agent: alpha, bravo, charlie
    return alice


@pytest.fixture
def signed_in(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = _register(base)
    alice = Person(base, person.username)
    page, verifier = alice.authorize(client["client_id"], world.url)
    assert page.status_code == 200, page.text[:800]
    granted = _code(alice.allow(page))
    tokens = _exchange(base, client["client_id"], granted, verifier)
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
    client = _register(base)
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
    client = _register(base)
    alice = Person(base, person.username)
    page, verifier = alice.authorize(client["client_id"], world.url, scope="tools:read")
    granted = _code(alice.allow(page))
    access = _exchange(base, client["client_id"], granted, verifier).json()["access_token"]
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
    assert "code" in _code(again)  # no page: the consent covers it
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
    refreshed = _token(
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
    rotated = _token(base, grant_type="refresh_token", refresh_token=first, client_id=client_id)
    assert rotated.status_code == 200, rotated.text
    fresh = rotated.json()
    assert fresh["refresh_token"] != first
    ok, _ = rpc(world.url, fresh["access_token"], "tools/list")
    assert ok.status_code == 200
    replayed = _token(base, grant_type="refresh_token", refresh_token=first, client_id=client_id)
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
    client = _register(base)
    alice = Person(base, person.username)
    page, verifier = alice.authorize(client["client_id"], world.url)
    granted = _code(alice.allow(page))
    common = {"grant_type": "authorization_code", "redirect_uri": REDIRECT}
    wrong = _token(
        base, **common, code=granted["code"], client_id=client["client_id"], code_verifier="x" * 50
    )
    assert wrong.status_code == 400
    assert wrong.json()["error"] == "invalid_grant"
    page, verifier = alice.authorize(client["client_id"], world.url)
    granted = _code(page)  # remembered consent: the code comes at once
    once = dict(common, code=granted["code"], client_id=client["client_id"], code_verifier=verifier)
    assert _token(base, **once).status_code == 200
    replay = _token(base, **once)
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
    client = _register(base)
    alice = Person(base, person.username)
    resource = extra.pop("resource", world.url)
    if "code_challenge_method" in extra:
        extra["code_challenge"] = "x" * 43
    response, _ = alice.authorize(client["client_id"], resource or "", **extra)
    answer = _code(response)
    assert answer["error"] == error, answer
    assert answer["state"] == "state-1"
    assert answer.get("iss") == base  # RFC 9207 on errors too
    assert not Consent.objects.exists()


def test_a_redirect_uri_the_client_did_not_register_is_refused_without_redirecting(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = _register(base)
    alice = Person(base, person.username)
    response, _ = alice.authorize(
        client["client_id"], world.url, redirect_uri="http://127.0.0.1:1/x"
    )
    assert response.status_code == 400
    assert "127.0.0.1:1" not in response.headers.get("location", "")


def test_a_plain_http_redirect_to_another_host_is_refused(world, person):
    base = world.url.rsplit("/mcp", 1)[0]
    client = _register(base, redirect_uris=["http://evil.example/callback"])
    alice = Person(base, person.username)
    response, _ = alice.authorize(
        client["client_id"], world.url, redirect_uri="http://evil.example/callback"
    )
    assert response.status_code == 400
    assert "evil.example" not in response.headers.get("location", "")
