"""Requests to an upstream provider's endpoints, and the authorization URL.

Every request goes through the HTTP executor's transport: the egress guard checks the
endpoint's host (``TOOLHUB_EGRESS_ALLOW`` opens private ones) and the connection is
pinned to the address it checked; no redirect is followed; the whole exchange,
connecting and reading included, ends within ``TOOLHUB_UPSTREAM_TOKEN_TIMEOUT``
seconds; at most ``MAX_ANSWER_BYTES`` of an answer are read. Errors name what
happened (the provider's ``error`` code, an HTTP status, a timeout), never a token or
the client secret: the caller's messages may be recorded.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import httpx
from django.conf import settings

from executions import egress
from executions.executors.http.transport import get_transport
from registry.models import UpstreamProvider
from registry.models.upstream import TokenAuthMethod
from registry.services.upstream import TokenSet

MAX_ANSWER_BYTES = 64 * 1024
USER_AGENT = "ToolHub-UpstreamAccounts/1"
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105 - a name
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"  # noqa: S105 - a name


class ProviderError(Exception):
    """The provider could not be reached, or refused, or answered something unusable.
    The message says which (never a token or a secret)."""


@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def new(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode("ascii")).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii"))


def authorization_url(
    provider: UpstreamProvider, *, redirect_uri: str, state: str, challenge: str
) -> str:
    """Where a person is sent to connect: the provider's authorization endpoint with
    ToolHub's client id, the scopes, this flow's state and PKCE challenge (S256)."""
    params = {
        **(provider.authorization_params or {}),
        "response_type": "code",
        "client_id": provider.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    if provider.scopes:
        params["scope"] = " ".join(provider.scope_list())
    parts = urlsplit(provider.authorization_url)
    query = "&".join(q for q in (parts.query, urlencode(params, quote_via=quote)) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def _timeout() -> float:
    return float(settings.TOOLHUB_UPSTREAM_TOKEN_TIMEOUT)


def _client_auth(provider: UpstreamProvider, form: dict[str, str]) -> list[tuple[str, str]]:
    """The client's credentials: in the form (client_secret_post) or as HTTP Basic."""
    secret = provider.client_secret()
    if provider.token_auth_method == TokenAuthMethod.BASIC and secret:
        pair = f"{quote(provider.client_id, safe='')}:{quote(secret, safe='')}"
        token = base64.b64encode(pair.encode()).decode("ascii")
        return [("Authorization", f"Basic {token}")]
    form["client_id"] = provider.client_id
    if secret:
        form["client_secret"] = secret
    return []


def post_form(
    url: str, form: Mapping[str, str], headers: list[tuple[str, str]] = ()
) -> tuple[int, dict[str, Any] | None]:
    """POST ``form`` to ``url`` through the egress guard: the status and the JSON object
    answered (None when the body is not one). Raises ``ProviderError``."""
    timeout = _timeout()
    deadline = time.monotonic() + timeout
    host = urlsplit(url).hostname or url
    request = httpx.Request(
        "POST",
        url,
        headers=[
            ("Accept", "application/json"),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("User-Agent", USER_AGENT),
            *headers,
        ],
        content=urlencode(dict(form)).encode("ascii"),
        extensions={"timeout": dict.fromkeys(("connect", "read", "write", "pool"), timeout)},
    )
    try:
        response = get_transport().handle_request(request)
    except egress.EgressDenied as exc:
        raise ProviderError(str(exc)) from None
    except egress.HostResolutionError as exc:
        raise ProviderError(str(exc)) from None
    except httpx.TimeoutException:
        raise ProviderError(f"{host} did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise ProviderError(f"could not reach {host}: {type(exc).__name__}") from None
    try:
        body = _read(response, deadline, host, timeout)
    finally:
        response.close()
    try:
        data = json.loads(body) if body else None
    except ValueError:
        data = None
    return response.status_code, data if isinstance(data, dict) else None


def _read(response: httpx.Response, deadline: float, host: str, timeout: float) -> bytes:
    buffer = bytearray()
    try:
        for chunk in response.iter_bytes():
            buffer += chunk
            if len(buffer) > MAX_ANSWER_BYTES:
                raise ProviderError(f"{host} answered more than {MAX_ANSWER_BYTES} bytes")
            if time.monotonic() > deadline:
                raise ProviderError(f"{host} did not answer within {timeout:g} s")
    except httpx.TimeoutException:
        raise ProviderError(f"{host} did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise ProviderError(f"{host}'s answer broke off: {type(exc).__name__}") from None
    return bytes(buffer)


def _short(value: Any, limit: int = 200) -> str:
    return str(value)[:limit]


def _token_answer(provider: UpstreamProvider, status: int, data: dict | None) -> TokenSet:
    if status != 200 or data is None or "error" in data:
        error = (data or {}).get("error")
        described = (data or {}).get("error_description")
        said = f": {_short(error)}" + (f" ({_short(described)})" if described else "")
        raise ProviderError(
            f"{provider.name}'s token endpoint answered HTTP {status}{said if error else ''}"
        )
    token = data.get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError(f"{provider.name}'s token endpoint answered no access_token")
    kind = str(data.get("token_type") or "bearer").lower()
    if kind not in ("bearer", "n_a"):  # RFC 8693 §2.2.1: N_A for a token that is not one
        raise ProviderError(
            f"{provider.name} issued a {_short(kind, 20)} token, not a bearer token"
        )
    refresh = data.get("refresh_token")
    expires = data.get("expires_in")
    scope = data.get("scope")
    return TokenSet(
        access_token=token,
        refresh_token=refresh if isinstance(refresh, str) and refresh else None,
        expires_in=float(expires) if isinstance(expires, int | float) else None,
        scope=scope if isinstance(scope, str) else None,
    )


def _token_request(provider: UpstreamProvider, form: dict[str, str]) -> TokenSet:
    headers = _client_auth(provider, form)
    status, data = post_form(provider.token_url, form, headers)
    return _token_answer(provider, status, data)


def exchange_code(
    provider: UpstreamProvider, *, code: str, redirect_uri: str, verifier: str
) -> TokenSet:
    """The authorization code for tokens (RFC 6749 §4.1.3, with the PKCE verifier)."""
    return _token_request(
        provider,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        },
    )


def refresh(provider: UpstreamProvider, *, refresh_token: str) -> TokenSet:
    """A new access token for a refresh token (RFC 6749 §6); the provider may rotate it."""
    return _token_request(provider, {"grant_type": "refresh_token", "refresh_token": refresh_token})


def exchange_token(provider: UpstreamProvider, *, subject_token: str) -> TokenSet:
    """RFC 8693: the person's token for one meant for the provider's exchange audience."""
    return _token_request(
        provider,
        {
            "grant_type": TOKEN_EXCHANGE_GRANT,
            "subject_token": subject_token,
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "requested_token_type": ACCESS_TOKEN_TYPE,
            "audience": provider.exchange_audience,
        },
    )


def revoke(provider: UpstreamProvider, *, token: str, hint: str) -> None:
    """RFC 7009: ask the provider to revoke ``token``; ``ProviderError`` when it did not
    answer 200."""
    form = {"token": token, "token_type_hint": hint}
    headers = _client_auth(provider, form)
    status, data = post_form(provider.revocation_url, form, headers)
    if status != 200:
        error = (data or {}).get("error")
        raise ProviderError(
            f"{provider.name}'s revocation endpoint answered HTTP {status}"
            + (f": {_short(error)}" if error else "")
        )
