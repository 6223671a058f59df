"""The real pieces of the upstream-account tests: an OAuth authorization server, the API
people's tokens are for, and a person connecting their account over HTTP.

- ``UpstreamIdP``: oidc-provider on 127.0.0.1 (tests/node/upstream_provider.mjs), where
  ToolHub is a confidential client; refresh tokens rotate; RFC 8693 token exchange is a
  grant it implements; its token endpoint can be told to fail or hang.
- ``UpstreamApi``: the service the tools call, on 127.0.0.1: it asks the provider whose
  bearer token it was sent (RFC 7662 introspection, as its own client) and answers with
  that subject, so a test sees whom a call acted as. It records every Authorization
  header it receives.
- ``connect``: a person signs in at ToolHub, opens the connect page, presses Connect,
  signs in at the provider and allows; the provider sends them back to ToolHub's callback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx

from tests.html_forms import forms_of
from tests.node_packages import NODE_DIR, require_node
from tests.workers import wait_for

CLIENT_ID = "toolhub-upstream"
# Canaries: neither may reach a page, a log line, an audit event or an API answer.
CLIENT_SECRET = "upstream-client-secret-canary-9d41e07b"
API_CLIENT_ID = "upstream-api"
API_SECRET = "upstream-api-secret-2c7a"
EXCHANGE_AUDIENCE = "https://api.upstream.example"
PASSWORD = "upstream-password"


@dataclass
class UpstreamIdP:
    issuer: str
    accounts_file: Path

    def set_accounts(self, *logins: str) -> None:
        accounts = [
            {"login": login, "password": PASSWORD, "sub": f"sub-{login}"} for login in logins
        ]
        self.accounts_file.write_text(json.dumps({"accounts": accounts}))

    def token_endpoint(self, mode: str) -> None:
        """``ok``, ``fail`` (503) or ``hang`` (never answers)."""
        response = httpx.post(f"{self.issuer}/_test/token-endpoint", data={"mode": mode})
        assert response.status_code == 204

    def token_requests(self) -> list[str]:
        return httpx.get(f"{self.issuer}/_test/token-requests").json()

    def introspect(self, token: str) -> dict:
        response = httpx.post(
            f"{self.issuer}/token/introspection",
            data={"token": token, "client_id": API_CLIENT_ID, "client_secret": API_SECRET},
        )
        assert response.status_code == 200, response.text
        return response.json()

    def provider_fields(self) -> dict:
        """What a platform admin enters for this provider (the secret apart)."""
        return {
            "name": "Acme",
            "slug": "acme",
            "authorization_url": f"{self.issuer}/auth",
            "token_url": f"{self.issuer}/token",
            "revocation_url": f"{self.issuer}/token/revocation",
            "client_id": CLIENT_ID,
            "scopes": "openid offline_access profile",
        }


@contextmanager
def upstream_idp(workdir: Path, redirect_uris: list[str], access_ttl: int = 3600):
    require_node("oidc-provider", "The upstream account tests")
    accounts = workdir / "accounts.json"
    accounts.write_text(json.dumps({"accounts": []}))
    out, err = workdir / "stdout", workdir / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            ["node", str(NODE_DIR / "upstream_provider.mjs")],
            cwd=NODE_DIR,
            env={
                **os.environ,
                "UPSTREAM_CLIENT_ID": CLIENT_ID,
                "UPSTREAM_CLIENT_SECRET": CLIENT_SECRET,
                "UPSTREAM_REDIRECT_URIS": ",".join(redirect_uris),
                "UPSTREAM_API_CLIENT_ID": API_CLIENT_ID,
                "UPSTREAM_API_SECRET": API_SECRET,
                "UPSTREAM_ACCOUNTS_FILE": str(accounts),
                "UPSTREAM_ACCESS_TTL": str(access_ttl),
                "UPSTREAM_EXCHANGE_AUDIENCE": EXCHANGE_AUDIENCE,
            },
            stdout=stdout,
            stderr=stderr,
        )
    try:

        def started():
            if process.poll() is not None:
                raise AssertionError(f"the upstream provider exited: {err.read_text()}")
            line = out.read_text().strip()
            return json.loads(line.splitlines()[0])["issuer"] if line else None

        issuer = wait_for(started, timeout=30)
        yield UpstreamIdP(issuer, accounts)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Seen:
    path: str
    authorization: str | None


@dataclass
class UpstreamApi:
    url: str
    seen: list[Seen] = field(default_factory=list)

    def bearer_tokens(self) -> list[str]:
        return [
            s.authorization.split(" ", 1)[1]
            for s in self.seen
            if s.authorization and s.authorization.startswith("Bearer ")
        ]


@contextmanager
def upstream_api(idp: UpstreamIdP):
    """The API on 127.0.0.1: ``GET /whoami/<anything>`` answers whose token it was sent."""
    api = UpstreamApi(url="")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            authorization = self.headers.get("Authorization")
            api.seen.append(Seen(self.path, authorization))
            if self.path.startswith("/redirect-away"):
                location = parse_qs(urlsplit(self.path).query)["to"][0]
                self._answer(302, {"moved": True}, [("Location", location)])
                return
            if self.path.startswith("/echo-authorization"):  # an API that repeats it
                self._answer(200, {"authorization": authorization})
                return
            if not authorization or not authorization.startswith("Bearer "):
                self._answer(401, {"error": "no bearer token"})
                return
            found = idp.introspect(authorization.split(" ", 1)[1])
            if not found.get("active"):
                self._answer(401, {"error": "the token is not active"})
                return
            self._answer(
                200,
                {
                    "sub": found.get("sub"),
                    "aud": found.get("aud"),
                    "client_id": found.get("client_id"),
                    "path": self.path,
                },
            )

        def _answer(self, status: int, body: dict, headers=()):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()


def sign_in(base: str, username: str) -> httpx.Client:
    """A browser signed in to ToolHub as ``username`` (password ``pw-<username>``)."""
    browser = httpx.Client(timeout=30, follow_redirects=True)
    page = browser.get(f"{base}/accounts/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    signed = browser.post(
        f"{base}/accounts/login/",
        data={"username": username, "password": "pw-" + username, "csrfmiddlewaretoken": csrf},
        follow_redirects=False,
    )
    assert signed.status_code == 302, signed.text[:500]
    return browser


@dataclass
class Connected:
    response: httpx.Response  # ToolHub's page at the end (its callback's answer)
    pages: list[str]  # every page the person saw on the way
    authorize_url: str  # where ToolHub sent the person at the provider


def connect(
    browser: httpx.Client, base: str, idp: UpstreamIdP, login: str, slug: str = "acme"
) -> Connected:
    """The person (signed in at ToolHub in ``browser``) connects their account ``login``."""
    pages = []
    page = browser.get(f"{base}/accounts/upstream/{slug}/connect/")
    assert page.status_code == 200, page.text[:500]
    pages.append(page.text)
    form = next(f for f in forms_of(page) if f["id"] == "upstream-connect-form")
    response = browser.post(str(page.url), data=form["fields"])
    authorize_url = response.history[0].headers["location"] if response.history else ""
    for _ in range(3):  # the provider's login form, then its consent form
        if not str(response.url).startswith(idp.issuer):
            break
        pages.append(response.text)
        form = forms_of(response)[0]
        data = dict(form["fields"])
        if "password" in data:
            data.update(login=login, password=PASSWORD)
        response = browser.post(urljoin(str(response.url), form["action"]), data=data)
    assert str(response.url).startswith(base), response.url
    pages.append(response.text)
    return Connected(response, pages, authorize_url)
