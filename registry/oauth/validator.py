"""django-oauth-toolkit's validator with ToolHub's rules, at the toolkit's extension points.

- A redirect over plain http goes to a loopback host only (RFC 8252 §7.3, a desktop
  client's local listener); anything else must be https or a scheme the operator listed.
- Every token is for exactly one of ToolHub's resources (``registry.oauth.resources``):
  the authorization request names it (``views``), the client-credentials request must.
- A client-credentials client acts as its agent: its ``user`` must be an agent's, active.
- What the server issues and revokes is audited (never a token's value).
- OpenID Connect: every client's ID tokens are RS256 (``sign_id_tokens``); the identity
  scopes (``openid``, ``profile``, ``email``) say who the person is and give no right at a
  resource; a token with ``openid`` is accepted at the userinfo endpoint, which is the
  authorization server's own and no token's resource, while its consent still covers it.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict
from urllib.parse import urlsplit

from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.cimd import is_cimd_client_id
from oauth2_provider.models import get_application_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from registry.models import Agent, Consent
from registry.oauth import resources
from registry.services.audit import audit_record

LOOPBACK_NAMES = ("localhost",)
IDENTITY_SCOPES = frozenset(settings.TOOLHUB_OIDC_SCOPES)


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


def sign_id_tokens(client) -> None:
    """Give ``client`` ID tokens signed with ToolHub's RSA key (RS256), the one algorithm
    the discovery document names: a client registered by RFC 7591 or read from its
    metadata document has none until then (the toolkit leaves it blank)."""
    if client.algorithm != client.RS256_ALGORITHM:
        type(client).objects.filter(pk=client.pk).update(algorithm=client.RS256_ALGORITHM)
        client.algorithm = client.RS256_ALGORITHM


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
            sign_id_tokens(client)
            now = {name: getattr(client, name) for name in fields}
            if before != now:
                action = "oauth.client_registered" if before is None else "oauth.client_changed"
                audit_client(client, action, by="metadata document", before=before)
        return valid

    def validate_redirect_uri(self, client_id, redirect_uri, request, *args, **kwargs):
        if redirect_refusal(redirect_uri) is not None:
            return False
        return super().validate_redirect_uri(client_id, redirect_uri, request, *args, **kwargs)

    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs):
        """The toolkit's, and the identity scopes only with ``openid``, only where a person
        signs in (a client-credentials client acts as no person), and only for a client
        whose ID tokens are signed as the discovery document says."""
        identity = IDENTITY_SCOPES & set(scopes)
        if identity and (
            "openid" not in identity
            or request.grant_type == "client_credentials"
            or client.algorithm != client.RS256_ALGORITHM
        ):
            return False
        return super().validate_scopes(client_id, scopes, client, request, *args, **kwargs)

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

    def validate_bearer_token(self, token, scopes, request):
        """At the userinfo endpoint: a token for a person, unexpired, its consent still
        covering it, whatever resource it is for (the endpoint belongs to the authorization
        server, not to a resource); the endpoint then asks for ``openid`` among its scopes
        (403 insufficient_scope without). Elsewhere, the toolkit's."""
        if urlsplit(request.uri or "").path != reverse("oauth2_provider:user-info"):
            return super().validate_bearer_token(token, scopes, request)
        found = self._load_access_token(token) if token else None
        if found is None or not found.is_valid():
            self._set_oauth2_error_on_request(request, found, [])
            return False
        if not self._acts_for_a_consenting_person(found):
            request.oauth2_error = OrderedDict(
                error="invalid_token",
                error_description="The token acts for no one (its consent was withdrawn, or "
                "the account is disabled).",
            )
            return False
        request.client = found.application
        request.user = found.user
        request.scopes = list(found.scopes)
        request.access_token = found
        return True

    @staticmethod
    def _acts_for_a_consenting_person(token) -> bool:
        if token.user_id is None or not token.user.is_active or len(token.resource or []) != 1:
            return False
        resource = token.resource[0]
        return Consent.covering(token.user, token.application, resource, token.scope.split())

    def validate_silent_login(self, request) -> bool:
        """OpenID Connect's prompt=none: the consent page asks a person to be signed in
        before the request is validated (one who is not gets ``login_required``)."""
        return True

    def validate_silent_authorization(self, request) -> bool:
        """prompt=none: answered by the consent page, which knows the person and the
        resource; a request its remembered consent does not cover gets ``consent_required``."""
        return True

    def get_additional_claims(self):
        """The claims besides ``sub`` (the user's pk), each given only with its scope
        (the toolkit's ``oidc_claim_scope``: names with ``profile``, email with ``email``)."""
        return {
            "name": lambda request: request.user.get_full_name(),
            "given_name": lambda request: request.user.first_name,
            "family_name": lambda request: request.user.last_name,
            "preferred_username": lambda request: request.user.get_username(),
            "email": lambda request: request.user.email,
        }

    def get_oidc_claims(self, token, token_handler, request):
        """The toolkit's, without the claims the person has no value for."""
        claims = super().get_oidc_claims(token, token_handler, request)
        return {name: value for name, value in claims.items() if value not in ("", None)}

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
