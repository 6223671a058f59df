"""An OAuth client and a person at a live ToolHub, over HTTP: registration, sign-in, the
consent page, the code and its exchange."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from html import unescape
from urllib.parse import parse_qs, urlsplit

import httpx

REDIRECT = "http://127.0.0.1:8765/callback"


def pkce() -> tuple[str, str]:
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
        verifier, challenge = pkce()
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


def redirected(response: httpx.Response) -> dict:
    assert response.status_code == 302, response.text[:500]
    location = response.headers["location"]
    assert location.startswith(REDIRECT), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def register(base: str, **extra) -> dict:
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


def token(base: str, **data) -> httpx.Response:
    return httpx.post(base + "/oauth/token/", data=data, timeout=20)


def exchange(base: str, client_id: str, granted: dict, verifier: str) -> httpx.Response:
    """The code of ``granted`` (the redirect's query) for tokens, with its PKCE verifier."""
    return token(
        base,
        grant_type="authorization_code",
        code=granted["code"],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=verifier,
    )
