"""What an OAuth access token establishes: client C acting for person P at one resource.

The caller is P (their rights decide what may be listed and run), narrowed to the scopes
P consented to C and to the token's resource; the record of each call names P and C.
A client-credentials token acts as the client's agent, as its static token would.

Tokens are kept in memory per registry generation like API tokens: revoking one
deletes its row, which moves the generation (``registry/generation_triggers.py``), so
the next call finds it gone.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from registry import authorization, snapshot
from registry.models import Consent
from registry.oauth import resources
from registry.oauth.validator import client_agent


@dataclass(frozen=True)
class Delegation:
    """An OAuth access token as ToolHub acts on it (never its value)."""

    # What MCP sessions and listen streams are bound to: the client, the person and the
    # resource, so a refreshed token keeps its client's session.
    token_hash: str
    client_id: str
    client_name: str
    person_id: int | None  # None: a client-credentials client acting as its agent
    scopes: frozenset[str]
    resource: str
    expires: datetime

    def allows(self, scope: str) -> bool:
        return scope in self.scopes

    def is_for(self, resource: str) -> bool:
        return resources.normalized(resource) == self.resource


# What an OAuth token may do at the REST API (resource <origin>/api/v1), by (method, URL
# name): discover and call tools, and follow its own calls. Everything else (governance,
# agents, audit) takes an agent's token or a person's session.
REST_SCOPES = {
    ("GET", "registry-me"): "tools:read",
    ("GET", "tool-list"): "tools:read",
    ("GET", "tool-detail"): "tools:read",
    ("GET", "tool-schema"): "tools:read",
    ("GET", "toolset-list"): "tools:read",
    ("GET", "toolset-detail"): "tools:read",
    ("POST", "execution-list"): "tools:call",
    ("GET", "execution-list"): "tools:call",
    ("GET", "execution-detail"): "tools:call",
    ("GET", "execution-output"): "tools:call",
    ("POST", "execution-cancel"): "tools:call",
}


def rest_refusal(delegation: Delegation, method: str, url_name: str | None) -> str | None:
    """Why ``delegation`` may not make this REST request, or None."""
    needed = REST_SCOPES.get((method, url_name or ""))
    if needed is None:
        return (
            "An OAuth token may discover and call tools and follow its calls; this endpoint "
            "takes an agent token or a person's session."
        )
    if not delegation.allows(needed):
        return f"The person this client acts for did not give it '{needed}'."
    return None


def recorded_client(delegation: Delegation | None) -> dict[str, str]:
    """What a call's record says of the OAuth client it came through (``toolhub.context``)."""
    if delegation is None:
        return {}
    return {"oauth_client_id": delegation.client_id, "oauth_client_name": delegation.client_name}


def _checksum(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _load(checksum: str):
    token = (
        get_access_token_model()
        .objects.select_related("user", "application")
        .filter(token_checksum=checksum)
        .first()
    )
    if token is None or len(token.resource or []) != 1:
        return None
    client = token.application
    agent = None
    if token.user_id is None:
        agent = client_agent(client)
        if agent is None:
            return None
        user = agent.user
    else:
        user = token.user
    resource = resources.normalized(token.resource[0])
    scopes = frozenset(token.scope.split())
    if agent is None and not Consent.covering(user, client, resource, scopes):
        return None  # a token outliving its consent (withdrawn, or narrowed) acts for no one
    authorization.role_ids_of(user)  # read once, onto the shared user
    key = f"oauth\0{client.client_id}\0{user.pk}\0{resource}"
    return (
        user,
        agent,
        Delegation(
            token_hash=hashlib.sha256(key.encode()).hexdigest(),
            client_id=client.client_id,
            client_name=client.name or client.client_id,
            person_id=None if agent is not None else user.pk,
            scopes=scopes,
            resource=resource,
            expires=token.expires,
        ),
    )


def load(raw: str, entries) -> tuple[object, Delegation] | str:
    """``(user, Delegation)`` for a raw access token, or why it is refused."""
    checksum = _checksum(raw)
    entry = snapshot.cached(entries, ("oauth", checksum), lambda: _load(checksum), keep_none=False)
    if entry is None:
        return "Invalid token (unknown, revoked, or its consent was withdrawn)."
    user, agent, found = entry
    if found.expires <= timezone.now():
        return "This token has expired; refresh it."
    if not user.is_active:
        return "The account of this token is disabled."
    if agent is not None and not (agent.is_active and agent.owner.is_active):
        return "The agent of this client is inactive, or its owner is deactivated."
    return user, found
