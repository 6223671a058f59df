"""People's own upstream accounts: connecting, what a call needs, disconnecting.

A tool of ``auth_type`` ``caller_account`` acts with the account its caller holds at the
tool's upstream provider (``registry.models.upstream``):

- **Admission** (``connection_refusal``): the call must be made for a person (an OAuth
  client acting for them; an agent's own token has no person behind it:
  ``person_required``) who has a live connection to the provider (otherwise
  ``connection_required``, naming the page where they connect).
- **Running** (``account_for_call``): the runner takes the person's access token,
  refreshed first when it expires within ``REFRESH_MARGIN_SECONDS`` (the connection's
  row locked meanwhile, so concurrent calls refresh once and a rotated refresh token is
  never used twice), exchanged for one meant for the provider's audience when the
  provider accepts RFC 8693 token exchange (used for that call only, never stored).
  Every value of them is a secret of the call (``CallSecrets`` redacts them).
- **Connecting** (``connect_start`` / ``connect_finish``): the authorization code flow
  with PKCE (S256) and a state kept in the person's session, the code exchanged server
  side (``executions.upstream.client``); **disconnecting** revokes the tokens at the
  provider's revocation endpoint when it has one, then ends the connection.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.urls import reverse

from executions.executors.http.values import CALLER_ACCOUNT
from executions.redaction import redact_text, with_encoded_forms
from executions.upstream import client
from registry.models import UpstreamConnection, UpstreamProvider
from registry.policy import LENT_ACCOUNT_CONFIGS, policy_check
from registry.services import upstream as upstream_services
from toolhub import log_secrets
from toolhub.exceptions import Conflict, PermissionDenied, ToolHubError

logger = logging.getLogger(__name__)

# A token that expires within this many seconds is refreshed before the call.
REFRESH_MARGIN_SECONDS = 60
# Error types of a call that could not get its caller's token (the execution's
# ``error_type``; nothing was sent to the tool).
CONNECTION_REQUIRED = "connection_required"
CONNECTION_REFRESH_FAILED = "connection_refresh_failed"
TOKEN_EXCHANGE_FAILED = "token_exchange_failed"  # noqa: S105 - an error type
RUN_ERRORS = (CONNECTION_REQUIRED, CONNECTION_REFRESH_FAILED, TOKEN_EXCHANGE_FAILED)
PROVIDER_CONFIG = LENT_ACCOUNT_CONFIGS[0]


class ConnectionRequired(Conflict):
    """The person has no live connection to the tool's provider; ``connect_url`` says
    where they make one (a path here; the REST and MCP answers make it absolute)."""

    code = "connection_required"


class PersonRequired(PermissionDenied):
    """An agent's own token (or a client acting as an agent) called a tool that acts with
    its caller's own account: there is no person, so no account."""

    code = "person_required"


def connect_path(slug: str) -> str:
    return reverse("upstream-connect", args=[slug])


def provider_slug(configs: dict[str, Any]) -> str | None:
    """The provider an HTTP tool's configs name, when its auth_type is caller_account."""
    if configs.get("auth_type") != CALLER_ACCOUNT:
        return None
    slug = configs.get(PROVIDER_CONFIG)
    return str(slug) if slug else ""


def _tool_configs(tool) -> dict[str, Any]:
    """The two configs admission reads, from the tool's prefetched configs."""
    return {
        c.config_key: c.value
        for c in tool.configs.all()
        if c.config_key in ("auth_type", PROVIDER_CONFIG)
    }


def connection_refusal(*, user, agent, tool) -> ToolHubError | None:
    """Why a call of ``tool`` by ``user`` (``agent``: the agent behind it, if any) may not
    be admitted for want of the caller's own account; None when it may."""
    if tool.type != "http":
        return None
    slug = provider_slug(_tool_configs(tool))
    if slug is None:
        return None
    provider = UpstreamProvider.objects.filter(slug=slug).first() if slug else None
    if provider is None:
        return Conflict(
            f"Tool '{tool.name}' acts with its caller's own account at upstream provider "
            f"'{slug}', which is not registered: ask a platform admin.",
            code="provider_unknown",
        )
    if agent is not None:
        return PersonRequired(
            f"Tool '{tool.name}' acts with the caller's own {provider.name} account, and "
            f"agent '{agent.name}' calls with its own token: an agent has no such account. "
            "Call it through an OAuth client a person signed in to (it then acts as them "
            "with their account).",
            extra={"provider": provider.slug},
        )
    connection = upstream_services.live_connection(person=user, provider=provider)
    if connection is None or not connection.usable:
        return ConnectionRequired(
            f"Tool '{tool.name}' acts with your own {provider.name} account, and you have "
            f"not connected one{' that can still be used' if connection else ''}: connect "
            "it (signed in to ToolHub, at the connect URL), then call again.",
            extra={"connect_url": connect_path(provider.slug), "provider": provider.slug},
        )
    return None


# Running


class AccountUnavailable(Exception):
    """The call cannot have its caller's token: ``error_type`` and a message to record."""

    def __init__(self, error_type: str, message: str, connection_id: int | None = None):
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.connection_id = connection_id  # the connection it concerns, when there is one


@dataclass(frozen=True)
class CallerAccount:
    """The token a call sends, and which connection it came from (recorded by its id)."""

    connection_id: int
    token: str
    secrets: tuple[str, ...]  # every token value the call held, for its redaction


def account_for_call(execution, configs: dict[str, Any]) -> CallerAccount | None:
    """The caller's token for ``execution`` (None for a tool that sends none). Raises
    ``AccountUnavailable``; values it read are added to the log redaction at once."""
    slug = provider_slug(configs)
    if slug is None:
        return None
    provider = UpstreamProvider.objects.filter(slug=slug).first() if slug else None
    if provider is None:
        raise AccountUnavailable("config_error", f"upstream provider '{slug}' is not registered")
    if execution.agent_id is not None or execution.principal_id is None:
        raise AccountUnavailable(
            CONNECTION_REQUIRED, "the call was not made for a person, who alone has an account"
        )
    connection = (
        UpstreamConnection.objects.select_related("person", "provider")
        .filter(person_id=execution.principal_id, provider=provider, revoked_at__isnull=True)
        .first()
    )
    if connection is None:
        raise AccountUnavailable(
            CONNECTION_REQUIRED,
            f"no live {provider.name} connection of the caller (disconnected since the call "
            f"was admitted?): connect at {connect_path(provider.slug)}",
        )
    held = [connection.access_token(), connection.refresh_token()]
    log_secrets.add(_redactor(held))
    if connection.expires_within(REFRESH_MARGIN_SECONDS):
        connection = _refreshed(connection, execution, held)
    token = connection.access_token()
    held.append(token)
    if provider.token_exchange:
        token = _exchanged(provider, token, held, connection.pk)
    return CallerAccount(connection.pk, token, tuple(v for v in held if v))


def _redactor(held: list[str]):
    return lambda text: redact_text(text, with_encoded_forms([v for v in held if v]))


def _refreshed(connection: UpstreamConnection, execution, held: list[str]) -> UpstreamConnection:
    """The connection with a fresh access token (the row locked while it is got: a
    concurrent call waits, then finds it fresh)."""
    provider = connection.provider
    failure = None
    with transaction.atomic():
        locked = (
            UpstreamConnection.objects.select_for_update()
            .select_related("person", "provider")
            .get(pk=connection.pk)
        )
        if locked.revoked_at is not None:
            raise AccountUnavailable(
                CONNECTION_REQUIRED, "the connection was revoked meanwhile", connection.pk
            )
        if not locked.expires_within(REFRESH_MARGIN_SECONDS):
            return locked  # another call refreshed it while this one waited
        if not locked.has_refresh_token:
            failure = f"the {provider.name} token expired and there is no refresh token"
        else:
            refresh_token = locked.refresh_token()
            held.append(refresh_token)
            try:
                tokens = client.refresh(provider, refresh_token=refresh_token)
            except client.ProviderError as exc:
                failure = str(exc)
            else:
                held.extend(v for v in (tokens.access_token, tokens.refresh_token) if v)
                return upstream_services.upstream_connection_refreshed(
                    connection=locked,
                    tokens=tokens,
                    for_person=locked.person,
                    execution_id=str(execution.pk),
                )
    # Recorded in a transaction of its own: the lock above is released, nothing stored.
    text = _redactor(held)(failure)
    upstream_services.upstream_connection_refresh_failed(
        connection=connection,
        reason=text,
        for_person=connection.person,
        execution_id=str(execution.pk),
    )
    raise AccountUnavailable(
        CONNECTION_REFRESH_FAILED,
        f"could not refresh the caller's {provider.name} token: {text}. Reconnect at "
        f"{connect_path(provider.slug)} if it keeps failing.",
        connection.pk,
    )


def _exchanged(provider: UpstreamProvider, token: str, held: list[str], connection_id) -> str:
    try:
        tokens = client.exchange_token(provider, subject_token=token)
    except client.ProviderError as exc:
        raise AccountUnavailable(
            TOKEN_EXCHANGE_FAILED,
            f"{provider.name} did not exchange the caller's token for one meant for "
            f"'{provider.exchange_audience}': {_redactor(held)(str(exc))}",
            connection_id,
        ) from None
    held.append(tokens.access_token)
    return tokens.access_token


# Connecting


FLOWS_KEY = "toolhub.upstream.flows"
FLOW_SECONDS = 600
MAX_FLOWS = 5


class ConnectRefused(Exception):
    """A connection could not be made; the message says why (shown to the person)."""


def connect_start(session, provider: UpstreamProvider, *, redirect_uri: str) -> str:
    """The provider's authorization URL for a new flow, remembered in ``session`` (its
    state, PKCE verifier and redirect URI) for ``FLOW_SECONDS``."""
    now = time.time()
    flows = {
        state: flow
        for state, flow in (session.get(FLOWS_KEY) or {}).items()
        if isinstance(flow, dict) and flow.get("started", 0) > now - FLOW_SECONDS
    }
    for state in sorted(flows, key=lambda s: flows[s]["started"])[
        : max(0, len(flows) - MAX_FLOWS + 1)
    ]:
        del flows[state]
    state = secrets.token_urlsafe(32)
    pkce = client.Pkce.new()
    flows[state] = {
        "provider": provider.pk,
        "verifier": pkce.verifier,
        "redirect_uri": redirect_uri,
        "started": now,
    }
    session[FLOWS_KEY] = flows
    return client.authorization_url(
        provider, redirect_uri=redirect_uri, state=state, challenge=pkce.challenge
    )


def connect_finish(
    session, person, provider: UpstreamProvider, *, state: str, code: str, error: str
) -> UpstreamConnection:
    """The provider sent the person back: check the state against their session, exchange
    the code (server side, through the egress guard) and store the tokens."""
    flows = dict(session.get(FLOWS_KEY) or {})
    flow = flows.pop(state, None) if state else None
    session[FLOWS_KEY] = flows
    if (
        not isinstance(flow, dict)
        or flow.get("provider") != provider.pk
        or flow.get("started", 0) <= time.time() - FLOW_SECONDS
    ):
        raise ConnectRefused(
            "This answer does not belong to a connection you started here in the last "
            f"{FLOW_SECONDS // 60} minutes: start again."
        )
    if error:
        raise ConnectRefused(f"{provider.name} did not connect your account ({error[:100]}).")
    if not code:
        raise ConnectRefused(f"{provider.name} sent you back without a code: start again.")
    try:
        tokens = client.exchange_code(
            provider, code=code, redirect_uri=flow["redirect_uri"], verifier=flow["verifier"]
        )
    except client.ProviderError as exc:
        logger.warning("upstream %s: the code exchange failed: %s", provider.slug, exc)
        raise ConnectRefused(f"{provider.name} did not give ToolHub your tokens: {exc}.") from None
    return upstream_services.upstream_connection_save(
        person=person, provider=provider, tokens=tokens
    )


def connection_disconnect(*, actor, connection: UpstreamConnection) -> str | None:
    """End ``connection`` (its person or a platform admin): its tokens are revoked at the
    provider's revocation endpoint first when it has one. Returns what went wrong there
    (the connection ends all the same), or None."""
    policy_check(actor=actor, action="upstream_connection.revoke", owner=connection.person)
    provider = connection.provider
    problem = None
    at_provider = None
    if connection.is_live and provider.revocation_url:
        held = [connection.refresh_token(), connection.access_token()]
        try:
            if held[0]:
                client.revoke(provider, token=held[0], hint="refresh_token")
            client.revoke(provider, token=held[1], hint="access_token")
            at_provider = True
        except client.ProviderError as exc:
            problem, at_provider = _redactor(held)(str(exc)), False
            logger.warning("upstream %s: revocation failed: %s", provider.slug, problem)
    upstream_services.upstream_connection_revoke(
        actor=actor, connection=connection, revoked_at_provider=at_provider
    )
    return problem
