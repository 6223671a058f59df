"""django-oauth-toolkit's validator with ToolHub's rules, at the toolkit's extension points.

- A redirect over plain http goes to a loopback host only (RFC 8252 §7.3, a desktop
  client's local listener); anything else must be https or a scheme the operator listed.
- Every token is for exactly one of ToolHub's resources (``registry.oauth.resources``):
  the authorization request names it (``views``), the client-credentials request must.
- A client-credentials client acts as its agent: its ``user`` must be an agent's, active.
- What the server issues and revokes is audited (never a token's value).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from django.utils import timezone
from oauth2_provider.cimd import is_cimd_client_id
from oauth2_provider.models import get_application_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from registry.models import Agent, Consent
from registry.oauth import resources
from registry.services.audit import audit_record

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def redirect_refusal(uri: str) -> str | None:
    """Why ``uri`` may not be a redirect URI, or None."""
    parts = urlsplit(uri)
    if parts.fragment:
        return "A redirect URI may not have a fragment."
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return "A plain-http redirect URI must go to a loopback host (127.0.0.1, [::1], localhost)."
    return None


def client_agent(client) -> Agent | None:
    """The active agent a client-credentials client acts as, or None."""
    if client is None or client.authorization_grant_type != client.GRANT_CLIENT_CREDENTIALS:
        return None
    return (
        Agent.objects.select_related("user", "owner")
        .filter(user_id=client.user_id, is_active=True, user__is_active=True)
        .first()
    )


def client_summary(client) -> dict:
    return {"client_id": client.client_id, "name": client.name}


def audit_client(client, action: str, *, by: str, before: dict | None = None) -> None:
    """``oauth.client_registered`` / ``oauth.client_changed`` for a client that registered
    itself (RFC 7591) or was read from its metadata document."""
    audit_record(
        actor=None,
        action=action,
        target=client,
        target_repr=client.name or client.client_id,
        before=before,
        after={
            **client_summary(client),
            "redirect_uris": client.redirect_uris.split(),
            "grant_type": client.authorization_grant_type,
            "by": by,
        },
    )


class ToolHubOAuth2Validator(OAuth2Validator):
    def validate_client_id(self, client_id, request, *args, **kwargs):
        """The toolkit's; a client read from its metadata document (first sight, or the
        document changed since) is audited."""
        if not is_cimd_client_id(client_id):
            return super().validate_client_id(client_id, request, *args, **kwargs)
        fields = ("name", "redirect_uris")
        before = get_application_model().objects.filter(client_id=client_id).values(*fields).first()
        valid = super().validate_client_id(client_id, request, *args, **kwargs)
        client = request.client
        if valid and client is not None:
            now = {name: getattr(client, name) for name in fields}
            if before != now:
                action = "oauth.client_registered" if before is None else "oauth.client_changed"
                audit_client(client, action, by="metadata document", before=before)
        return valid

    def validate_redirect_uri(self, client_id, redirect_uri, request, *args, **kwargs):
        if redirect_refusal(redirect_uri) is not None:
            return False
        return super().validate_redirect_uri(client_id, redirect_uri, request, *args, **kwargs)

    def validate_grant_type(self, client_id, grant_type, client, request, *args, **kwargs):
        if grant_type == "client_credentials":
            if client_agent(client) is None:
                return False  # only a client an admin made for an (active) agent
            try:  # checked with the request, so a refusal is the token endpoint's answer
                request.resource = [resources.single(self._requested_resources(request))]
            except resources.ResourceError as exc:
                raise errors.CustomOAuth2Error(
                    error="invalid_target", description=str(exc), request=request
                ) from None
        return super().validate_grant_type(client_id, grant_type, client, request, *args, **kwargs)

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        """The toolkit's, and the person's consent must still cover what the refresh
        token was for (a consent withdrawn or narrowed ends its refresh tokens too)."""
        if not super().validate_refresh_token(refresh_token, client, request, *args, **kwargs):
            return False
        found = request.refresh_token_instance
        if found.user_id is None:
            return True
        scopes = found.access_token.scope.split() if found.access_token else []
        return bool(found.resource) and all(
            Consent.covering(found.user, client, resource, scopes) for resource in found.resource
        )

    def _save_bearer_token(self, token, request, *args, **kwargs):
        super()._save_bearer_token(token, request, *args, **kwargs)
        person = request.user
        if request.grant_type == "client_credentials":
            person = None
        else:  # "last used": when the client last got a token for the person there
            Consent.objects.filter(
                person=person,
                client=request.client,
                resource__in=list(request.resource or []),
                revoked_at__isnull=True,
            ).update(last_used_at=timezone.now())
        audit_record(
            actor=person if person is not None else request.client.user,
            action="oauth.token_issued",
            target=request.client,
            target_repr=request.client.name or request.client.client_id,
            after={
                **client_summary(request.client),
                "grant_type": request.grant_type,
                "person": person.get_username() if person is not None else None,
                "scope": token.get("scope", ""),
                "resource": list(request.resource or []),
                "refresh_token": "refresh_token" in token,
            },
        )

    @staticmethod
    def _requested_resources(request) -> list[str]:
        values = [v for k, v in (getattr(request, "decoded_body", None) or []) if k == "resource"]
        if values:
            return values
        resource = getattr(request, "resource", None)
        if isinstance(resource, str):
            return [resource] if resource.strip() else []
        return list(resource or [])

    def revoke_token(self, token, token_type_hint, request, *args, **kwargs):
        super().revoke_token(token, token_type_hint, request, *args, **kwargs)
        client = request.client
        if getattr(client, "pk", None) is None:
            return
        audit_record(
            actor=client.user,
            action="oauth.token_revoked",
            target=client,
            target_repr=client.name or client.client_id,
            after={**client_summary(client), "by": "client", "token_type_hint": token_type_hint},
        )
