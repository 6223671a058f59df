"""Each person's own upstream account: connecting it, calls acting with it, refreshing,
exchanging and revoking its tokens, and where those tokens may never go.

Everything is real: the provider is oidc-provider (tests/node/upstream_provider.mjs) on
127.0.0.1, where ToolHub is a confidential client; the API the tool calls is a server on
127.0.0.1 that asks the provider whose token it was sent (introspection) and answers with
that subject; people connect over HTTP through ToolHub's live server (sign in, connect
page, the provider's login and consent, ToolHub's callback); calls come through the REST
API with an OAuth access token acting for the person, and run in this process (the
inline path of a waiting HTTP call).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import close_old_connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, set_token_value
from rest_framework.test import APIClient

from executions.models import Execution
from registry.models import AuditEvent, UpstreamConnection, UpstreamProvider
from registry.oauth.tokens import access_token
from registry.rights import RIGHTS_BY_KEY
from registry.services import agents as agent_services
from registry.services import consents as consent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from registry.services import upstream as upstream_services
from tests.conftest import token_client
from tests.factories import make_user
from tests.servers.upstream_accounts import (
    CLIENT_SECRET,
    EXCHANGE_AUDIENCE,
    connect,
    sign_in,
    upstream_api,
    upstream_idp,
)
from toolhub.exceptions import ToolHubError

pytestmark = pytest.mark.django_db(transaction=True)
TOKEN_TIMEOUT = 1.5


@pytest.fixture(scope="module")
def idp(live_server, tmp_path_factory):
    callback = f"{live_server.url}/accounts/upstream/acme/callback/"
    with upstream_idp(tmp_path_factory.mktemp("upstream-idp"), [callback]) as provider:
        yield provider


@pytest.fixture(scope="module")
def api(idp):
    with upstream_api(idp) as server:
        yield server


@pytest.fixture
def world(idp, api, settings, live_server, upstream):
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    settings.TOOLHUB_UPSTREAM_TOKEN_TIMEOUT = TOKEN_TIMEOUT
    idp.set_accounts("alice", "bob", "carol")
    idp.token_endpoint("ok")
    api.seen.clear()
    provider = upstream_services.upstream_provider_create(
        actor=None, client_secret=CLIENT_SECRET, **idp.provider_fields()
    )
    role = role_services.role_create(actor=None, name="acme-users")
    tool = account_tool("acme_whoami", api.url, "/whoami/{path}", role)
    people = {}
    for name in ("alice", "bob", "carol"):
        people[name] = make_user(name)
        people[name].groups.add(role)
    owner = make_user("owner-otto")
    agent = agent_services.agent_create(
        actor=None, name="acme-agent", owner=owner, role_ids=[role.pk]
    )
    client = Application.objects.create(
        name="Desk assistant",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/callback",
    )
    return {
        "base": live_server.url,
        "provider": provider,
        "role": role,
        "tool": tool,
        "people": people,
        "agent": agent,
        "oauth_client": client,
        "idp": idp,
        "api": api,
        "upstream": upstream,
    }


def account_tool(name: str, base_url: str, endpoint: str, role, **extra_configs):
    configs = {
        "base_url": base_url,
        "endpoint": endpoint,
        "auth_type": "caller_account",
        "upstream_provider": "acme",
        **extra_configs,
    }
    tool = tool_services.tool_create(
        actor=None,
        name=name,
        type="http",
        timeout_seconds=10,
        parameters=[{"name": "path", "type": "string", "required": False}],
        configs=[{"config_key": k, "config_value": v} for k, v in configs.items()],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return tool


def as_person(world, person) -> APIClient:
    """The REST API with an OAuth access token: the desk assistant acting for ``person``
    (what the consent page and the token endpoint leave behind: a consent and a token)."""
    consent_services.consent_give(
        person=person,
        client=world["oauth_client"],
        resource="http://testserver/api/v1",
        scopes=["tools:read", "tools:call"],
    )
    token = AccessToken(
        user=person,
        application=world["oauth_client"],
        expires=timezone.now() + timedelta(hours=1),
        scope="tools:read tools:call",
        resource=["http://testserver/api/v1"],
    )
    raw = access_token(None)
    set_token_value(token, raw)  # stored hashed, as the token endpoint stores it
    token.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def call(client: APIClient, tool: str = "acme_whoami", **inputs):
    return client.post(
        "/api/v1/executions",
        {"tool": tool, "input_data": {"path": "me", **inputs}, "wait": True},
        format="json",
    )


def connected(world, name: str):
    browser = sign_in(world["base"], name)
    done = connect(browser, world["base"], world["idp"], name)
    assert done.response.status_code == 200, done.response.text[:800]
    return done, UpstreamConnection.objects.get(
        person=world["people"][name], revoked_at__isnull=True
    )


def events(action: str, **filters):
    return list(AuditEvent.objects.filter(action=action, **filters).order_by("id"))


# Connecting


def test_connecting_runs_the_code_flow_with_pkce_and_stores_the_tokens_encrypted(world):
    done, connection = connected(world, "alice")

    assert "Your Acme account is connected" in done.response.text
    asked = parse_qs(urlsplit(done.authorize_url).query)
    assert done.authorize_url.startswith(world["idp"].issuer + "/auth?")
    assert asked["code_challenge_method"] == ["S256"] and len(asked["code_challenge"][0]) == 43
    assert len(asked["state"][0]) >= 40
    assert asked["redirect_uri"] == [f"{world['base']}/accounts/upstream/acme/callback/"]
    assert asked["scope"] == ["openid offline_access profile"]
    assert "client_secret" not in done.authorize_url

    token, refresh = connection.access_token(), connection.refresh_token()
    assert world["idp"].introspect(token)["sub"] == "sub-alice"  # the provider's own word
    assert refresh and connection.expires_at > timezone.now() + timedelta(minutes=50)
    stored = UpstreamConnection.objects.filter(pk=connection.pk).values().get()
    assert token not in json.dumps(stored, default=str)
    assert refresh not in json.dumps(stored, default=str)
    assert (connection.created_by, connection.person) == (world["people"]["alice"],) * 2

    made = events("upstream_connection.created")
    assert len(made) == 1 and made[0].actor == world["people"]["alice"]
    assert made[0].after["provider"] == "acme" and made[0].after["has_refresh_token"] is True
    text = json.dumps([made[0].before, made[0].after])
    assert token not in text and refresh not in text
    for page in done.pages:
        assert CLIENT_SECRET not in page and token not in page


def test_connecting_again_replaces_the_live_connection(world):
    _, first = connected(world, "alice")
    _, second = connected(world, "alice")
    first.refresh_from_db()
    assert first.revoked_at is not None and first.revoked_by == world["people"]["alice"]
    assert second.is_live and second.pk != first.pk
    assert events("upstream_connection.created")[-1].after["replaced"] == first.pk


def test_an_answer_that_is_not_this_sessions_flow_connects_nothing(world):
    asked = len(world["idp"].token_requests())
    alice = sign_in(world["base"], "alice")
    page = alice.get(f"{world['base']}/accounts/upstream/acme/connect/")
    csrf = page.text.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    started = alice.post(
        f"{world['base']}/accounts/upstream/acme/connect/",
        data={"csrfmiddlewaretoken": csrf},
        follow_redirects=False,
    )
    state = parse_qs(urlsplit(started.headers["location"]).query)["state"][0]
    # Bob's browser brings Alice's state (and any code): it is not his session's.
    bob = sign_in(world["base"], "bob")
    callback = f"{world['base']}/accounts/upstream/acme/callback/"
    refused = bob.get(callback, params={"state": state, "code": "stolen-code"})
    assert refused.status_code == 400 and "does not belong" in refused.text
    forged = alice.get(callback, params={"state": "forged", "code": "x"})
    assert forged.status_code == 400
    assert not UpstreamConnection.objects.exists()
    assert len(world["idp"].token_requests()) == asked  # no code was taken to the provider


def test_the_connect_pages_need_a_signed_in_person(world):
    anonymous = Client()
    for name in ("upstream-accounts",):
        response = anonymous.get(reverse(name))
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    response = anonymous.get(reverse("upstream-connect", args=["acme"]))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


# Calls


def test_a_call_for_alice_acts_as_alice_and_one_for_bob_as_bob(world):
    _, alices = connected(world, "alice")
    _, bobs = connected(world, "bob")

    for name, connection in (("alice", alices), ("bob", bobs)):
        answer = call(as_person(world, world["people"][name]))
        assert answer.status_code == 200, answer.content
        body = answer.json()
        assert body["status"] == "succeeded", body
        assert body["output_data"]["data"]["sub"] == f"sub-{name}"
        assert body["upstream_connection_id"] == connection.pk
        execution = Execution.objects.get(pk=body["id"])
        assert execution.upstream_connection_id == connection.pk
        assert execution.principal == world["people"][name]
        last = events("execution.succeeded", target_id=str(execution.pk))[-1]
        assert last.after["content_version"] == 6
    # Each token went to the API once, for its own person's call only.
    assert world["api"].bearer_tokens() == [alices.access_token(), bobs.access_token()]


def test_a_person_without_a_connection_is_refused_409_with_the_connect_url(world):
    answer = call(as_person(world, world["people"]["carol"]))

    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["code"] == "connection_required"
    assert error["connect_url"] == "http://testserver/accounts/upstream/acme/connect/"
    assert error["provider"] == "acme"
    assert "Acme account" in error["message"]
    execution = Execution.objects.get(pk=error["execution_id"])
    assert (execution.status, execution.reason_code) == ("denied", "connection_required")
    assert execution.principal == world["people"]["carol"]
    assert events("execution.denied", target_id=str(execution.pk))
    assert world["api"].seen == []


def test_an_agents_own_token_is_refused_saying_an_agent_has_no_account(world):
    connected(world, "alice")  # someone's account exists: it is not the agent's
    answer = call(token_client(world["agent"].user))

    assert answer.status_code == 403
    error = answer.json()["error"]
    assert error["code"] == "person_required"
    assert "agent 'acme-agent' calls with its own token" in error["message"]
    assert "an agent has no such account" in error["message"]
    execution = Execution.objects.get(pk=error["execution_id"])
    assert (execution.status, execution.reason_code) == ("denied", "person_required")
    assert world["api"].seen == []


def test_an_expiring_token_is_refreshed_before_the_call_and_the_rotation_is_stored(world):
    _, connection = connected(world, "alice")
    old_access, old_refresh = connection.access_token(), connection.refresh_token()
    UpstreamConnection.objects.filter(pk=connection.pk).update(
        expires_at=timezone.now() + timedelta(seconds=30)
    )

    body = call(as_person(world, world["people"]["alice"])).json()

    assert body["status"] == "succeeded", body
    assert body["output_data"]["data"]["sub"] == "sub-alice"
    connection.refresh_from_db()
    new_access, new_refresh = connection.access_token(), connection.refresh_token()
    assert new_access != old_access and new_refresh != old_refresh  # rotated, and stored
    assert connection.expires_at > timezone.now() + timedelta(minutes=50)
    assert connection.refreshed_at is not None
    assert connection.refreshed_by == world["people"]["alice"]
    assert world["api"].bearer_tokens() == [new_access]
    assert world["idp"].token_requests()[-1] == "refresh_token"
    refreshed = events("upstream_connection.refreshed")
    assert len(refreshed) == 1 and refreshed[0].after["refresh_token_rotated"] is True
    assert refreshed[0].after["execution_id"] == body["id"]
    text = json.dumps([refreshed[0].before, refreshed[0].after])
    for token in (old_access, old_refresh, new_access, new_refresh):
        assert token not in text
    # The rotated-out refresh token is spent: the provider refuses it now.
    assert world["idp"].introspect(old_refresh)["active"] is False


def test_two_calls_at_once_refresh_the_token_once(world):
    _, connection = connected(world, "alice")
    UpstreamConnection.objects.filter(pk=connection.pk).update(
        expires_at=timezone.now() + timedelta(seconds=30)
    )
    asked = len(world["idp"].token_requests())
    clients = [as_person(world, world["people"]["alice"]) for _ in range(2)]
    bodies: list[dict] = []

    def one(client):
        try:
            bodies.append(call(client).json())
        finally:
            close_old_connections()

    threads = [threading.Thread(target=one, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    # A rotated refresh token used twice would be refused (and the grant revoked): the
    # second call waited for the first one's refresh and used its token.
    assert [b["status"] for b in bodies] == ["succeeded", "succeeded"], bodies
    assert world["idp"].token_requests()[asked:] == ["refresh_token"]
    assert len(events("upstream_connection.refreshed")) == 1
    connection.refresh_from_db()
    assert world["api"].bearer_tokens() == [connection.access_token()] * 2


@pytest.mark.parametrize("mode", ["fail", "hang"])
def test_a_failing_or_hanging_token_endpoint_fails_the_call_within_the_bound(world, mode):
    _, connection = connected(world, "alice")
    UpstreamConnection.objects.filter(pk=connection.pk).update(
        expires_at=timezone.now() + timedelta(seconds=10)
    )
    world["idp"].token_endpoint(mode)
    try:
        started = time.monotonic()
        body = call(as_person(world, world["people"]["alice"])).json()
        took = time.monotonic() - started
    finally:
        world["idp"].token_endpoint("ok")

    assert body["status"] == "failed"
    assert body["error_type"] == "connection_refresh_failed"
    said = "HTTP 503: temporarily_unavailable" if mode == "fail" else "did not answer within 1.5 s"
    assert said in body["error_message"]
    assert "/accounts/upstream/acme/connect/" in body["error_message"]
    assert took < TOKEN_TIMEOUT + 4, took  # the bound, with room for a loaded machine
    assert body["upstream_connection_id"] == connection.pk
    assert world["api"].seen == []  # nothing was sent with a stale token
    failed = events("upstream_connection.refresh_failed")
    assert len(failed) == 1 and failed[0].after["execution_id"] == body["id"]
    connection.refresh_from_db()
    assert connection.refreshed_at is None and connection.is_live


def test_disconnecting_revokes_at_the_provider_and_the_next_call_is_refused(world):
    _, connection = connected(world, "alice")
    token, refresh = connection.access_token(), connection.refresh_token()
    assert world["idp"].introspect(token)["active"] is True
    alice = sign_in(world["base"], "alice")
    page = alice.get(f"{world['base']}/accounts/upstream/")
    assert "Acme" in page.text and token not in page.text
    csrf = page.text.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]

    after = alice.post(
        f"{world['base']}/accounts/upstream/connections/{connection.pk}/disconnect/",
        data={"csrfmiddlewaretoken": csrf},
    )

    assert after.status_code == 200 and "Your Acme account is disconnected" in after.text
    connection.refresh_from_db()
    assert connection.revoked_at is not None and connection.revoked_by == world["people"]["alice"]
    assert world["idp"].introspect(token)["active"] is False
    assert world["idp"].introspect(refresh)["active"] is False
    revoked = events("upstream_connection.revoked")
    assert revoked[-1].after["by"] == "person" and revoked[-1].after["revoked_at_provider"] is True
    answer = call(as_person(world, world["people"]["alice"]))
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "connection_required"


def test_someone_elses_connection_cannot_be_disconnected_by_a_person(world):
    _, connection = connected(world, "alice")
    bob = sign_in(world["base"], "bob")
    page = bob.get(f"{world['base']}/accounts/upstream/acme/connect/")
    csrf = page.text.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    answer = bob.post(
        f"{world['base']}/accounts/upstream/connections/{connection.pk}/disconnect/",
        data={"csrfmiddlewaretoken": csrf},
    )
    assert answer.status_code == 404
    connection.refresh_from_db()
    assert connection.is_live


def test_a_platform_admin_revokes_in_the_admin(world, superuser):
    _, connection = connected(world, "alice")
    token = connection.access_token()
    admin = Client()
    admin.force_login(superuser)
    changelist = reverse("admin:registry_upstreamconnection_changelist")
    admin.post(changelist, {"action": "revoke", "_selected_action": [connection.pk], "index": 0})
    connection.refresh_from_db()
    assert connection.revoked_by == superuser
    assert world["idp"].introspect(token)["active"] is False
    assert events("upstream_connection.revoked")[-1].after["by"] == "admin"


def test_token_exchange_sends_a_token_for_the_audience_for_that_call_only(world):
    _, connection = connected(world, "alice")
    stored = connection.access_token()
    upstream_services.upstream_provider_update(
        actor=None,
        provider=world["provider"],
        data={"token_exchange": True, "exchange_audience": EXCHANGE_AUDIENCE},
    )

    body = call(as_person(world, world["people"]["alice"])).json()

    assert body["status"] == "succeeded", body
    seen = body["output_data"]["data"]
    assert (seen["sub"], seen["aud"]) == ("sub-alice", EXCHANGE_AUDIENCE)
    sent = world["api"].bearer_tokens()
    assert len(sent) == 1 and sent[0] != stored  # the exchanged token, not the stored one
    assert world["idp"].token_requests()[-1] == ("urn:ietf:params:oauth:grant-type:token-exchange")
    connection.refresh_from_db()
    assert connection.access_token() == stored  # used for that call only, never stored


def test_a_refused_token_exchange_fails_the_call(world):
    connected(world, "alice")
    upstream_services.upstream_provider_update(
        actor=None,
        provider=world["provider"],
        data={"token_exchange": True, "exchange_audience": "https://not-allowed.example"},
    )
    body = call(as_person(world, world["people"]["alice"])).json()
    assert (body["status"], body["error_type"]) == ("failed", "token_exchange_failed")
    assert "invalid_target" in body["error_message"]
    assert world["api"].seen == []


# Where the token goes, and where it never does


def test_the_token_never_reaches_a_record_a_log_line_an_answer_or_a_page(world, caplog, superuser):
    caplog.set_level(logging.DEBUG)
    done, connection = connected(world, "alice")
    tokens = [connection.access_token(), connection.refresh_token()]
    UpstreamConnection.objects.filter(pk=connection.pk).update(
        expires_at=timezone.now() + timedelta(seconds=5)
    )
    alice = as_person(world, world["people"]["alice"])
    answers = [call(alice), call(alice, path="again")]  # the first refreshes
    answers.append(call(alice, tool=echo_tool(world).name))  # an API that repeats it
    connection.refresh_from_db()
    tokens += [connection.access_token(), connection.refresh_token()]
    echoed = answers[-1].json()
    assert echoed["status"] == "succeeded"
    assert echoed["output_data"]["data"]["authorization"] == "Bearer [REDACTED]"
    admin = Client()
    admin.force_login(superuser)
    pages = [
        admin.get(reverse("admin:registry_upstreamconnection_change", args=[connection.pk])),
        admin.get(reverse("admin:registry_upstreamconnection_changelist")),
        admin.get(reverse("admin:registry_upstreamprovider_change", args=[world["provider"].pk])),
        admin.get(reverse("admin:registry_auditevent_changelist")),
        admin.get(reverse("admin:executions_execution_change", args=[answers[0].json()["id"]])),
    ]
    assert all(page.status_code == 200 for page in pages)

    rows = json.dumps(list(Execution.objects.values()), default=str)
    audit = json.dumps(list(AuditEvent.objects.values("before", "after", "target_repr")))
    seen = [rows, audit, caplog.text, *(a.content.decode() for a in answers)]
    seen += [p.content.decode() for p in pages] + done.pages
    for secret in [*tokens, CLIENT_SECRET]:
        for where, text in enumerate(seen):
            assert secret not in text, where


def echo_tool(world):
    return account_tool("acme_echo", world["api"].url, "/echo-authorization", world["role"])


def test_a_caller_account_tool_sends_the_token_to_its_base_urls_origin_only(world):
    connected(world, "alice")
    elsewhere = world["upstream"]
    alice = as_person(world, world["people"]["alice"])
    # An absolute endpoint on another origin: refused before anything is sent.
    account_tool("acme_absolute", world["api"].url, f"{elsewhere.url}/echo/x", world["role"])
    body = call(alice, tool="acme_absolute").json()
    assert (body["status"], body["error_type"]) == ("failed", "config_error")
    assert "origin of base_url only" in body["error_message"]
    # A host an input fills in: refused.
    account_tool("acme_any_host", "http://{path}", "/whoami", world["role"])
    body = call(alice, tool="acme_any_host", path=f"127.0.0.1:{elsewhere.port}").json()
    assert (body["status"], body["error_type"]) == ("failed", "config_error")
    # A redirect to another origin is followed without the token.
    redirecting = account_tool("acme_redirect", world["api"].url, "/redirect-away", world["role"])
    tool_services.parameter_create(actor=None, tool=redirecting, name="to")
    body = call(alice, tool="acme_redirect", to=f"{elsewhere.url}/echo/landed").json()
    assert body["status"] == "succeeded", body
    assert len(elsewhere.requests) == 1
    assert "authorization" not in elsewhere.requests[0].headers
    assert world["api"].bearer_tokens()  # the tool's own origin did get it


def test_who_may_point_peoples_tokens_somewhere(world):
    editors = role_services.role_create(actor=None, name="acme-editors")
    editors.permissions.add(
        *role_services.permissions_by_label(RIGHTS_BY_KEY["edit_tools"].permissions)
    )
    grant_services.grant_create(actor=None, role=editors, action="manage", tool=world["tool"])
    editor = make_user("eddie-editor")
    editor.groups.add(editors)
    tool = world["tool"]
    refused = {
        "base_url": lambda: tool_services.config_set(
            actor=editor, tool=tool, config_key="base_url", config_value="https://evil.example"
        ),
        "endpoint": lambda: tool_services.config_set(
            actor=editor, tool=tool, config_key="endpoint", config_value="https://evil.example/x"
        ),
        "auth_type": lambda: tool_services.config_set(
            actor=editor, tool=tool, config_key="auth_type", config_value="none"
        ),
        "upstream_provider": lambda: tool_services.config_delete(
            actor=editor, config=tool.configs.get(config_key="upstream_provider")
        ),
    }
    for name, write in refused.items():
        with pytest.raises(ToolHubError) as error:
            write()
        assert error.value.status_code == 403, name
    # Naming a provider on another tool takes a platform admin, even at creation.
    registrars = role_services.role_create(actor=None, name="acme-registrars")
    registrars.permissions.add(
        *role_services.permissions_by_label(RIGHTS_BY_KEY["register_tools"].permissions)
    )
    registrar = make_user("rita-registrar")
    registrar.groups.add(registrars)
    with pytest.raises(ToolHubError) as error:
        tool_services.tool_create(
            actor=registrar,
            name="sneaky",
            type="http",
            configs=[
                {"config_key": "base_url", "config_value": "https://evil.example"},
                {"config_key": "auth_type", "config_value": "caller_account"},
                {"config_key": "upstream_provider", "config_value": "acme"},
            ],
        )
    assert error.value.status_code == 403


# Providers


def test_a_tool_names_only_a_registered_provider_and_a_named_one_stays(world):
    with pytest.raises(ToolHubError) as unknown:
        tool_services.config_set(
            actor=None, tool=world["tool"], config_key="upstream_provider", config_value="nope"
        )
    assert unknown.value.status_code == 400 and "register it first" in unknown.value.message
    with pytest.raises(ToolHubError) as named:
        upstream_services.upstream_provider_delete(actor=None, provider=world["provider"])
    assert named.value.code == "provider_in_use" and "acme_whoami" in named.value.message


def test_removing_a_provider_removes_its_connections_and_is_audited(world):
    _, connection = connected(world, "alice")
    tool_services.tool_delete(actor=None, tool=world["tool"])
    upstream_services.upstream_provider_delete(actor=None, provider=world["provider"])
    assert not UpstreamConnection.objects.filter(pk=connection.pk).exists()
    deleted = events("upstream_provider.deleted")
    assert deleted[-1].after == {"connections_removed": 1, "live_connections_removed": 1}
    assert deleted[-1].before["client_secret"] == "********"


def test_a_platform_admin_registers_a_provider_in_the_admin_its_secret_never_shown(
    world, superuser
):
    admin = Client()
    admin.force_login(superuser)
    secret = "github-secret-canary-0f3e"
    added = admin.post(
        reverse("admin:registry_upstreamprovider_add"),
        {
            "name": "GitHub",
            "slug": "github",
            "authorization_url": "https://github.com/login/oauth/authorize",
            "token_url": "https://github.com/login/oauth/access_token",
            "revocation_url": "",
            "client_id": "Iv1.abc",
            "client_secret": secret,
            "token_auth_method": "client_secret_post",
            "scopes": "repo read:user",
            "authorization_params": "{}",
            "exchange_audience": "",
        },
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    github = UpstreamProvider.objects.get(slug="github")
    assert github.client_secret() == secret and secret not in github.encrypted_client_secret
    change = reverse("admin:registry_upstreamprovider_change", args=[github.pk])
    for url in (change, reverse("admin:registry_upstreamprovider_changelist")):
        page = admin.get(url)
        assert page.status_code == 200 and secret not in page.content.decode()
    assert "/accounts/upstream/github/callback/" in admin.get(change).content.decode()
    created = events("upstream_provider.created", target_id=str(github.pk))
    assert created[0].after["client_secret"] == "********"
    assert secret not in json.dumps(created[0].after)
    # Saved again with the secret left empty: kept.
    form = {
        "name": "GitHub",
        "slug": "github",
        "authorization_url": "https://github.com/login/oauth/authorize",
        "token_url": "https://github.com/login/oauth/access_token",
        "client_id": "Iv1.abc",
        "token_auth_method": "client_secret_post",
        "scopes": "repo",
        "authorization_params": "{}",
    }
    assert admin.post(change, form).status_code == 302
    github.refresh_from_db()
    assert github.client_secret() == secret and github.scopes == "repo"
    changed = events("upstream_provider.updated", target_id=str(github.pk))
    assert changed[-1].after["changed"] == ["scopes"]


def test_a_provider_takes_https_endpoints_or_loopback_http(world):
    fields = {**world["idp"].provider_fields(), "slug": "plain"}
    fields["token_url"] = "http://tokens.example.com/token"
    with pytest.raises(ToolHubError) as refused:
        upstream_services.upstream_provider_create(actor=None, **fields)
    assert refused.value.details[0]["field"] == "token_url"
