"""Token authentication: ``Authorization: Bearer <token>`` (or DRF's ``Token <token>``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import authentication, exceptions

from registry import authorization, snapshot
from registry.models.tokens import ApiToken, hash_token
from registry.oauth import delegation, resources
from registry.oauth.tokens import ACCESS_PREFIX

# last_used_at is refreshed at most this often, so authentication does not
# write to the database on every request.
LAST_USED_RESOLUTION = timedelta(seconds=60)
# When this process last wrote each token's last_used_at (the token rows it
# keeps in memory are not re-read for that column).
_touched: dict[str, object] = {}
_touched_lock = threading.Lock()


def _load(token_hash: str):
    """(token, user, agent) for a token hash, with the user's roles read once; None if unknown.

    Kept per registry generation (``registry/snapshot.py``) and shared by the
    threads of the process: read-only.
    """
    token = (
        ApiToken.objects.select_related("user", "user__agent", "user__agent__owner")
        .filter(token_hash=token_hash)
        .first()
    )
    if token is None:
        return None
    user = token.user
    authorization.role_ids_of(user)  # reads the roles now, once, onto the shared user
    return token, user, getattr(user, "agent", None)


def _past_max_age(token) -> bool:
    """Issued more than ``TOOLHUB_TOKEN_MAX_DAYS`` ago (tokens from before the setting)."""
    max_days = getattr(settings, "TOOLHUB_TOKEN_MAX_DAYS", None)
    return bool(max_days) and token.created_at < timezone.now() - timedelta(days=max_days)


def _touch_due(token, now) -> bool:
    last = _touched.get(token.token_hash) or token.last_used_at
    return last is None or now - last > LAST_USED_RESOLUTION


def _touch(token) -> None:
    now = timezone.now()
    if not _touch_due(token, now):
        return
    with _touched_lock:
        if not _touch_due(token, now):  # another thread wrote it meanwhile
            return
        if len(_touched) > 100_000:
            _touched.clear()
        _touched[token.token_hash] = now
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: expected 'Bearer <token>'."
            )
        try:
            raw = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed(
                "The token contains invalid characters."
            ) from None
        user, credentials = self.authenticate_token(raw)
        if credentials.delegation is not None:
            self._check_delegation(request, credentials.delegation)
        return user, credentials

    @staticmethod
    def _check_delegation(request, found) -> None:
        """An OAuth token at the REST API: for this API (its resource), and a request its
        scopes cover (``registry.oauth.delegation.REST_SCOPES``)."""
        here = request.build_absolute_uri("/" + resources.REST_PATH.strip("/"))
        if not found.is_for(here):
            raise exceptions.AuthenticationFailed(
                f"This token is for {found.resource}, not {here} (RFC 8707)."
            )
        match = getattr(request._request, "resolver_match", None)
        refusal = delegation.rest_refusal(found, request.method, match and match.url_name)
        if refusal:
            raise exceptions.PermissionDenied(refusal)

    def authenticate_token(self, raw: str):
        """``(user, TokenCredentials)`` for a raw token, or AuthenticationFailed saying why.

        An OAuth access token's resource and scopes are the caller's to check against the
        request (``TokenCredentials.delegation``): the REST API here, the MCP endpoint in
        its gate."""
        if raw.startswith(ACCESS_PREFIX):
            return self.authenticate_delegation(raw)
        token_hash = hash_token(raw)
        entries = snapshot.current()
        # Unknown tokens are not kept: guessing cannot fill the memory.
        entry = snapshot.cached(
            entries, ("token", token_hash), lambda: _load(token_hash), keep_none=False
        )
        if entry is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        token, user, agent = entry
        if token.is_revoked:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        if token.is_expired or _past_max_age(token):
            raise exceptions.AuthenticationFailed("This token has expired.")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("The account of this token is disabled.")
        if agent is not None and not agent.is_active:
            raise exceptions.AuthenticationFailed("The agent of this token is inactive.")
        if agent is not None and not agent.owner.is_active:
            # An agent answers to its owner: one who left takes their agents along.
            raise exceptions.AuthenticationFailed(
                "The owner of this token's agent is deactivated; a platform admin can "
                "give the agent another owner."
            )
        _touch(token)
        # The registry entries read once here travel with the credentials (request.auth):
        # the execution pipeline reuses them (registry_entries).
        return user, TokenCredentials(token=token, registry=entries)

    def authenticate_delegation(self, raw: str):
        """``(user, TokenCredentials)`` for an OAuth access token: the person it acts for
        (or the agent of a client-credentials client), the client, scopes and resource."""
        entries = snapshot.current()
        found = delegation.load(raw, entries)
        if isinstance(found, str):
            raise exceptions.AuthenticationFailed(found)
        user, token = found
        return user, TokenCredentials(token=token, registry=entries, delegation=token)

    def authenticate_header(self, request):
        return 'Bearer realm="toolhub"'


@dataclass(frozen=True)
class TokenCredentials:
    """What token authentication establishes besides the user (``request.auth``):
    the token, the in-memory registry entries it was validated against, and for an
    OAuth access token what it delegates (``registry.oauth.delegation.Delegation``)."""

    token: Any
    registry: Any
    delegation: Any = None


def registry_entries(request):
    """The registry entries this request's token authentication validated, if any."""
    credentials = getattr(request, "auth", None)
    if isinstance(credentials, TokenCredentials):
        return credentials.registry
    return snapshot.UNREAD
