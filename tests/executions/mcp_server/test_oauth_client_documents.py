"""A client that names itself by its metadata document (an https client_id): ToolHub fetches
it through the egress guard, checks redirects against it, and says why one is refused.

A ToolHub process of this file's own trusts the test authority (``SSL_CERT_FILE``) and
may reach 127.0.0.1 (``TOOLHUB_EGRESS_ALLOW``); the documents are served over real TLS.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from jwcrypto import jwk, jwt
from oauth2_provider.models import Application

from executions.models import Execution
from registry.models import AuditEvent, Consent
from registry.services import grants as grant_services
from registry.services import roles as role_services
from tests.executions.mcp_server.conftest import echo_tool, rpc, toolhub_env, uvicorn_processes
from tests.executions.mcp_server.oauth_flow import REDIRECT, Person, exchange, redirected
from tests.factories import make_user
from tests.node_packages import NODE_DIR, require_node
from tests.servers.tls_documents import DocumentServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    server = DocumentServer(tmp_path_factory.mktemp("cimd"))
    yield server
    server.close()


@pytest.fixture(scope="module")
def toolhub(documents, django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        env = toolhub_env(
            SSL_CERT_FILE=str(documents.ca),
            TOOLHUB_EGRESS_ALLOW="127.0.0.1/32",
        )
        with uvicorn_processes(env, count=1) as live:
            yield live.url("")


@pytest.fixture
def alice(db):
    return make_user("alice-documents")


def document(client_id: str, **extra) -> dict:
    return {
        "client_id": client_id,
        "client_name": "Notebook Agent",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **extra,
    }


def test_a_client_named_by_its_document_signs_in_with_no_registration(toolhub, documents, alice):
    client_id = documents.origin + "/notebook/client.json"
    documents.serve_json("/notebook/client.json", document(client_id))
    metadata = httpx.get(toolhub + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert metadata["client_id_metadata_document_supported"] is True
    person = Person(toolhub, alice.username)
    page, verifier = person.authorize(client_id, toolhub + "/mcp")
    assert page.status_code == 200, page.text[:500]
    assert "Notebook Agent" in page.text
    granted = redirected(person.allow(page))
    tokens = exchange(toolhub, client_id, granted, verifier)
    assert tokens.status_code == 200, tokens.text
    listed, _ = rpc(toolhub + "/mcp", tokens.json()["access_token"], "tools/list")
    assert listed.status_code == 200
    assert documents.hits.count("/notebook/client.json") == 1  # fetched once, then cached
    registered = AuditEvent.objects.get(action="oauth.client_registered")
    assert registered.after["by"] == "metadata document"
    assert registered.after["client_id"] == client_id


def test_a_client_named_by_its_document_gets_an_id_token_when_it_asks_for_openid(
    toolhub, documents, alice
):
    client_id = documents.origin + "/openid/client.json"
    documents.serve_json("/openid/client.json", document(client_id))
    person = Person(toolhub, alice.username)
    page, verifier = person.authorize(client_id, toolhub + "/mcp", scope="openid tools:read")
    granted = redirected(person.allow(page))
    tokens = exchange(toolhub, client_id, granted, verifier)
    assert tokens.status_code == 200, tokens.text
    keys = jwk.JWKSet.from_json(httpx.get(toolhub + "/oauth/jwks/", timeout=10).text)
    claims = json.loads(jwt.JWT(jwt=tokens.json()["id_token"], key=keys, algs=["RS256"]).claims)
    assert (claims["iss"], claims["aud"], claims["sub"]) == (toolhub, client_id, str(alice.pk))
    assert Application.objects.get(client_id=client_id).algorithm == "RS256"


def test_a_redirect_the_document_does_not_list_is_refused(toolhub, documents, alice):
    client_id = documents.origin + "/strict/client.json"
    documents.serve_json("/strict/client.json", document(client_id))
    person = Person(toolhub, alice.username)
    page, _ = person.authorize(client_id, toolhub + "/mcp", redirect_uri="http://127.0.0.1:9/x")
    assert page.status_code == 400
    assert "127.0.0.1:9" not in page.headers.get("location", "")
    assert not Consent.objects.exists()


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("private", "may not be fetched"),
        ("unreachable", "could not be fetched"),
        ("too_large", "over"),
        ("not_json", "not JSON"),
        ("other_id", ""),
        ("hanging", "could not be fetched"),
        ("drip", "took too long"),
    ],
)
def test_a_document_that_cannot_be_used_is_refused_saying_why(
    toolhub, documents, alice, case, said
):
    path = f"/refused/{case}.json"
    client_id = {
        "private": "https://10.255.255.1/client.json",
        "unreachable": "https://127.0.0.1:9/client.json",
    }.get(case, documents.origin + path)
    if case == "too_large":
        documents.serve_json(path, document(client_id, padding="x" * 20_000))
    elif case == "not_json":
        documents.serve_json(path, b"<html></html>", kind="text/html")
    elif case == "hanging":
        documents.stall.add(path)
    elif case == "drip":
        documents.drip.add(path)
    elif case == "other_id":
        documents.serve_json(path, document(documents.origin + "/someone-else.json"))
    person = Person(toolhub, alice.username)
    started = time.monotonic()
    page, _ = person.authorize(client_id, toolhub + "/mcp")
    assert time.monotonic() - started < 15  # the fetch's 5 s deadline holds, with room
    assert page.status_code in (400, 401), page.status_code
    assert "location" not in page.headers  # never redirected anywhere the document named
    if said:
        assert said in page.text
    assert not AuditEvent.objects.filter(action="oauth.client_registered").exists()


# --------------------------------------------------------------------------- a stock client

CHROMIUM = "/usr/bin/chromium"


class TypeScriptClient:
    """tests/node/mcp_oauth_client.mjs: the official TypeScript SDK's OAuth client."""

    def __init__(self, url: str, document_url: str | None, tool: str, arguments: dict):
        self.proc = subprocess.Popen(
            [
                "node",
                str(NODE_DIR / "mcp_oauth_client.mjs"),
                url,
                REDIRECT,
                document_url or "-",
                tool,
                json.dumps(arguments),
            ],
            cwd=NODE_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.events: list[dict] = []

    def next_event(self, kind: str) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"the client ended before {kind}: {self.proc.stderr.read()}")
            event = json.loads(line)
            self.events.append(event)
            if event["event"] == "error":
                raise AssertionError(event["message"])
            if event["event"] == kind:
                return event

    def send_code(self, code: str) -> None:
        self.proc.stdin.write(code + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def consent_in_chromium(authorize_url: str, username: str) -> dict:
    """A person signs in and allows, in Chromium; the redirect's query (never loaded)."""
    from playwright.sync_api import sync_playwright

    captured: dict = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_page()

            def catch(route):
                captured.update(redirected_query(route.request.url))
                route.fulfill(status=200, body="signed in")

            page.route(REDIRECT + "*", catch)
            page.goto(authorize_url)
            page.fill("#id_username", username)
            page.fill("#id_password", "pw-" + username)
            page.click("input[type=submit]")
            page.wait_for_selector("input[name=allow]")
            assert "TypeScript SDK client" in page.content()
            page.click("input[name=allow]")
            page.wait_for_function("document.body.innerText.includes('signed in')")
        finally:
            browser.close()
    return captured


def redirected_query(url: str) -> dict:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


@pytest.fixture
def callable_tool(upstream, alice):
    role = role_services.role_create(actor=None, name="documents-callers")
    alice.groups.add(role)
    tool = echo_tool(upstream, "doc_echo")
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return tool


@pytest.mark.parametrize("identity", ["metadata document", "registration"])
def test_the_typescript_sdk_signs_in_through_the_browser_and_calls_for_the_person(
    toolhub, documents, alice, callable_tool, identity
):
    require_node("@modelcontextprotocol/sdk", "The stock-client sign-in tests")
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does)")
    document_url = None
    if identity == "metadata document":
        document_url = documents.serve_json(
            "/ts/client.json",
            document(documents.origin + "/ts/client.json", client_name="TypeScript SDK client"),
        )
    client = TypeScriptClient(toolhub + "/mcp", document_url, "doc_echo", {"path": "from-ts"})
    try:
        authorize = client.next_event("authorize")["url"]
        asked = redirected_query(authorize)
        assert asked["resource"] == toolhub + "/mcp"
        assert asked["code_challenge_method"] == "S256"
        assert asked["client_id"] == (document_url or asked["client_id"])
        granted = consent_in_chromium(authorize, alice.username)
        assert granted["iss"] == toolhub
        client.send_code(granted["code"])
        done = client.next_event("done")
    finally:
        client.close()
    assert "doc_echo" in done["tools"]
    assert not done["result"].get("isError"), done["result"]
    execution = Execution.objects.get(tool=callable_tool)
    assert execution.principal_id == alice.pk
    assert execution.oauth_client_id == asked["client_id"]
    assert execution.oauth_client_name == "TypeScript SDK client"
    by = "metadata document" if document_url else "registration (RFC 7591)"
    assert AuditEvent.objects.get(action="oauth.client_registered").after["by"] == by


def test_registration_can_be_turned_off(client, settings):
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": False}
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    assert "registration_endpoint" not in metadata
    refused = client.post(
        "/oauth/register/",
        data=json.dumps({"client_name": "x", "redirect_uris": [REDIRECT]}),
        content_type="application/json",
    )
    assert refused.status_code == 404
