"""Upstream providers and people's connections to them (``registry.models.upstream``).

Providers are platform admins' (``upstream_provider.write``). A connection is written
when its person connects (``executions.services.upstream_accounts``, which talks to the
provider: outgoing I/O lives in executions), refreshed by the runner before a call,
and revoked by its person or a platform admin (``upstream_connection.revoke``). Every
write is an audit event; none records a token or the client secret.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone

from registry.models import ToolConfig, UpstreamConnection, UpstreamProvider
from registry.models.upstream import SECRET_SHOWN
from registry.policy import LENT_ACCOUNT_CONFIGS, policy_check
from registry.services.audit import audit_record
from registry.services.validation import full_clean, raise_invalid
from toolhub.exceptions import Conflict

PROVIDER_FIELDS = (
    "name",
    "slug",
    "authorization_url",
    "token_url",
    "revocation_url",
    "client_id",
    "token_auth_method",
    "scopes",
    "authorization_params",
    "token_exchange",
    "exchange_audience",
)
_URL_FIELDS = ("authorization_url", "token_url", "revocation_url")


def provider_snapshot(provider: UpstreamProvider) -> dict:
    """What the audit log keeps of a provider: its fields, the secret only as a mask."""
    return {
        **{name: getattr(provider, name) for name in PROVIDER_FIELDS},
        "client_secret": SECRET_SHOWN if provider.has_client_secret else "",
    }


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _url_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        if parts.username or parts.password or parts.fragment:
            return "it may not hold a user part or a fragment"
        return None
    if parts.scheme == "http" and _is_loopback(parts.hostname):
        return None
    return "use https (plain http only to a loopback host)"


def _check_provider(provider: UpstreamProvider) -> None:
    full_clean(provider, exclude=["encrypted_client_secret"])
    problems = [
        {"field": name, "message": f"{getattr(provider, name)}: {problem}.", "code": "invalid"}
        for name in _URL_FIELDS
        if getattr(provider, name)
        and (problem := _url_problem(getattr(provider, name))) is not None
    ]
    if not isinstance(provider.authorization_params, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in provider.authorization_params.items()
    ):
        problems.append(
            {
                "field": "authorization_params",
                "message": "A JSON object of parameter names to text values.",
                "code": "invalid",
            }
        )
    reserved = {"client_id", "redirect_uri", "state", "code_challenge", "response_type"}
    if isinstance(provider.authorization_params, dict) and reserved & set(
        provider.authorization_params
    ):
        problems.append(
            {
                "field": "authorization_params",
                "message": f"ToolHub sets {', '.join(sorted(reserved))} itself.",
                "code": "invalid",
            }
        )
    if provider.token_exchange and not provider.exchange_audience:
        problems.append(
            {
                "field": "exchange_audience",
                "message": "A provider that accepts token exchange needs the audience to ask for.",
                "code": "invalid",
            }
        )
    duplicate = UpstreamProvider.objects.filter(slug=provider.slug).exclude(pk=provider.pk)
    if duplicate.exists():
        problems.append(
            {"field": "slug", "message": "A provider with this slug exists.", "code": "duplicate"}
        )
    if problems:
        raise_invalid(problems)


def tools_naming(slug: str) -> list[str]:
    """The names of the tools whose ``upstream_provider`` config names ``slug``."""
    return sorted(
        ToolConfig.objects.filter(
            config_key__in=LENT_ACCOUNT_CONFIGS, plain_value=slug
        ).values_list("tool__name", flat=True)
    )


def _still_named(slug: str, doing: str) -> None:
    names = tools_naming(slug)
    if names:
        raise Conflict(
            f"Tools still name upstream provider '{slug}' ({', '.join(names)}): point them at "
            f"another provider before you {doing} it.",
            code="provider_in_use",
        )


@transaction.atomic
def upstream_provider_create(
    *, actor, client_secret: str | None = None, **fields: Any
) -> UpstreamProvider:
    policy_check(actor=actor, action="upstream_provider.write")
    unknown = set(fields) - set(PROVIDER_FIELDS)
    if unknown:
        raise TypeError(f"unknown provider fields: {sorted(unknown)}")
    provider = UpstreamProvider(**fields)
    provider.set_client_secret(client_secret)
    _check_provider(provider)
    provider.save()
    audit_record(
        actor=actor,
        action="upstream_provider.created",
        target=provider,
        after=provider_snapshot(provider),
    )
    return provider


_KEEP = object()


@transaction.atomic
def upstream_provider_update(
    *, actor, provider: UpstreamProvider, data: dict, client_secret: Any = _KEEP
) -> UpstreamProvider:
    """Change ``provider``'s fields (``data``); ``client_secret``: a new one, None to remove
    it, left out to keep it. Its slug changes only while no tool names it."""
    policy_check(actor=actor, action="upstream_provider.write")
    unknown = set(data) - set(PROVIDER_FIELDS)
    if unknown:
        raise TypeError(f"unknown provider fields: {sorted(unknown)}")
    provider = UpstreamProvider.objects.select_for_update().get(pk=provider.pk)
    before = provider_snapshot(provider)
    if "slug" in data and data["slug"] != provider.slug:
        _still_named(provider.slug, "rename")
    for name, value in data.items():
        setattr(provider, name, value)
    secret_changed = client_secret is not _KEEP
    if secret_changed:
        provider.set_client_secret(client_secret)
    _check_provider(provider)
    provider.save()
    after = provider_snapshot(provider)
    changed = sorted(k for k in after if after[k] != before[k])
    if secret_changed and "client_secret" not in changed:
        changed.append("client_secret")  # replaced by another: the mask alone would not say
    if changed:
        audit_record(
            actor=actor,
            action="upstream_provider.updated",
            target=provider,
            before=before,
            after={**after, "changed": changed},
        )
    return provider


@transaction.atomic
def upstream_provider_delete(*, actor, provider: UpstreamProvider) -> None:
    """Remove ``provider`` and every connection to it (their tokens with them); refused
    while a tool names it."""
    policy_check(actor=actor, action="upstream_provider.write")
    _still_named(provider.slug, "remove")
    snapshot = provider_snapshot(provider)
    connections = provider.connections.count()
    live = provider.connections.filter(revoked_at__isnull=True).count()
    provider_id, provider_repr = str(provider.pk), str(provider)
    provider.delete()
    audit_record(
        actor=actor,
        action="upstream_provider.deleted",
        target_type=UpstreamProvider._meta.label_lower,
        target_id=provider_id,
        target_repr=provider_repr,
        before=snapshot,
        after={"connections_removed": connections, "live_connections_removed": live},
    )


# Connections


@dataclass(frozen=True)
class TokenSet:
    """What a provider's token endpoint answered (never logged, never audited)."""

    access_token: str
    refresh_token: str | None = None  # None: none given (a refresh keeps the stored one)
    expires_in: float | None = None
    scope: str | None = None

    def expires_at(self, now: datetime) -> datetime | None:
        if self.expires_in is None:
            return None
        return now + timedelta(seconds=max(0.0, float(self.expires_in)))


def connection_snapshot(connection: UpstreamConnection) -> dict:
    """What the audit log keeps of a connection: never a token."""
    return {
        "person": connection.person.get_username(),
        "provider": connection.provider.slug,
        "scopes": connection.scopes,
        "expires_at": connection.expires_at,
        "has_refresh_token": connection.has_refresh_token,
        "revoked_at": connection.revoked_at,
    }


def live_connection(*, person, provider: UpstreamProvider) -> UpstreamConnection | None:
    return (
        UpstreamConnection.objects.select_related("provider", "person")
        .filter(person=person, provider=provider, revoked_at__isnull=True)
        .first()
    )


@transaction.atomic
def upstream_connection_save(
    *, person, provider: UpstreamProvider, tokens: TokenSet
) -> UpstreamConnection:
    """Store the tokens ``person`` got by connecting (their own doing: the person is the
    actor). A live connection to the same provider is replaced (revoked by them)."""
    now = timezone.now()
    replaced = (
        UpstreamConnection.objects.select_for_update()
        .filter(person=person, provider=provider, revoked_at__isnull=True)
        .first()
    )
    if replaced is not None:
        replaced.revoked_at, replaced.revoked_by = now, person
        replaced.save(update_fields=["revoked_at", "revoked_by"])
    connection = UpstreamConnection(
        person=person,
        provider=provider,
        expires_at=tokens.expires_at(now),
        scopes=tokens.scope if tokens.scope is not None else provider.scopes,
        created_by=person,
    )
    connection.set_tokens(tokens.access_token, tokens.refresh_token or "")
    connection.save()
    audit_record(
        actor=person,
        action="upstream_connection.created",
        target=connection,
        before=connection_snapshot(replaced) if replaced is not None else None,
        after={
            **connection_snapshot(connection),
            "replaced": replaced.pk if replaced is not None else None,
        },
    )
    return connection


def upstream_connection_refreshed(
    *, connection: UpstreamConnection, tokens: TokenSet, for_person, execution_id: str
) -> UpstreamConnection:
    """Store the tokens a refresh got (in the caller's transaction, with the row locked):
    a new access token, and the new refresh token when the provider rotates it."""
    before = connection_snapshot(connection)
    now = timezone.now()
    rotated = (
        tokens.refresh_token is not None and tokens.refresh_token != connection.refresh_token()
    )
    connection.set_tokens(tokens.access_token, tokens.refresh_token)
    connection.expires_at = tokens.expires_at(now)
    if tokens.scope is not None:
        connection.scopes = tokens.scope
    connection.refreshed_at, connection.refreshed_by = now, for_person
    connection.save(
        update_fields=[
            "encrypted_access_token",
            "encrypted_refresh_token",
            "expires_at",
            "scopes",
            "refreshed_at",
            "refreshed_by",
        ]
    )
    audit_record(
        actor=for_person,
        action="upstream_connection.refreshed",
        target=connection,
        before=before,
        after={
            **connection_snapshot(connection),
            "refresh_token_rotated": rotated,
            "execution_id": execution_id,
        },
    )
    return connection


def upstream_connection_refresh_failed(
    *, connection: UpstreamConnection, reason: str, for_person, execution_id: str
) -> None:
    """Record that refreshing ``connection`` before a call failed (``reason`` names what
    happened, never a token)."""
    audit_record(
        actor=for_person,
        action="upstream_connection.refresh_failed",
        target=connection,
        after={
            **connection_snapshot(connection),
            "reason": reason[:500],
            "execution_id": execution_id,
        },
    )


@transaction.atomic
def upstream_connection_revoke(
    *, actor, connection: UpstreamConnection, revoked_at_provider: bool | None = None
) -> UpstreamConnection:
    """End ``connection``: its tokens are never used again (the next call of a tool of its
    provider for its person is refused, ``connection_required``). ``revoked_at_provider``:
    whether the provider's revocation endpoint took them (None: it has none, or nobody
    asked it)."""
    policy_check(actor=actor, action="upstream_connection.revoke", owner=connection.person)
    connection = (
        UpstreamConnection.objects.select_for_update()
        .select_related("person", "provider")
        .get(pk=connection.pk)
    )
    if connection.revoked_at is not None:
        return connection
    before = connection_snapshot(connection)
    connection.revoked_at, connection.revoked_by = timezone.now(), actor
    connection.save(update_fields=["revoked_at", "revoked_by"])
    by_person = actor is not None and actor.pk == connection.person_id
    audit_record(
        actor=actor,
        action="upstream_connection.revoked",
        target=connection,
        before=before,
        after={
            **connection_snapshot(connection),
            "by": "person" if by_person else ("admin" if actor is not None else "system"),
            "revoked_at_provider": revoked_at_provider,
        },
    )
    return connection
