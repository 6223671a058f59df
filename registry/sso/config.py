"""The identity provider ToolHub is configured with, read from the settings."""

from __future__ import annotations

from django.conf import settings
from django.utils.crypto import salted_hmac

# The provider's name in ToolHub's routes (/accounts/oidc/sso/login/callback/, the
# redirect URI registered at the identity provider) and on the accounts it links.
PROVIDER_ID = "sso"
PROVIDER = "openid_connect"


def sso_enabled() -> bool:
    return bool(
        settings.TOOLHUB_SSO_ISSUER
        and settings.TOOLHUB_SSO_CLIENT_ID
        and settings.TOOLHUB_SSO_CLIENT_SECRET
    )


def sso_app():
    """allauth's app for the configured provider (unsaved: the secret stays in the
    settings), or None with SSO off."""
    from allauth.socialaccount.models import SocialApp

    if not sso_enabled():
        return None
    return SocialApp(
        provider=PROVIDER,
        provider_id=PROVIDER_ID,
        name=settings.TOOLHUB_SSO_NAME,
        client_id=settings.TOOLHUB_SSO_CLIENT_ID,
        secret=settings.TOOLHUB_SSO_CLIENT_SECRET,
        settings={
            "server_url": settings.TOOLHUB_SSO_ISSUER,
            "scope": list(settings.TOOLHUB_SSO_SCOPES),
            "oauth_pkce_enabled": True,
            "fetch_userinfo": True,
        },
    )


def nonce_for(state_id: str) -> str:
    """The nonce sent with the authorization request whose state is ``state_id``.

    Derived (keyed with SECRET_KEY) instead of stored: the state is kept in the
    person's session and checked by the callback before the nonce is, so an ID token
    is accepted only by the browser session that asked for it."""
    return salted_hmac("toolhub.sso.nonce", state_id, algorithm="sha256").hexdigest()


def hide_secret(text: str) -> str:
    """``text`` without the client secret (an identity provider's error may echo what
    it was sent)."""
    secret = settings.TOOLHUB_SSO_CLIENT_SECRET
    return text.replace(secret, "[REDACTED]") if secret else text
