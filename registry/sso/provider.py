"""allauth's OpenID Connect provider, held to what ToolHub verifies.

allauth verifies the issuer and audience of the ID token it receives from the token
endpoint but, as OpenID Connect Core allows for a token fetched over TLS, not its
signature, and it sends no nonce. ToolHub's provider sends a nonce bound to the
sign-in's state and verifies every ID token fully (``registry.sso.id_token``), checks
that the discovery document names the configured issuer, that userinfo is about the
same subject, and keys people by issuer and subject.
"""

from __future__ import annotations

import secrets

from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.providers.base import AuthProcess
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter
from allauth.utils import get_request_param
from django.conf import settings

from registry.sso import claims as sso_claims
from registry.sso.config import nonce_for
from registry.sso.id_token import IdTokenRefused, verify_id_token


class ToolHubOIDCAdapter(OpenIDConnectOAuth2Adapter):
    @property
    def openid_config(self) -> dict:
        config = super().openid_config
        issuer = str(config.get("issuer", "")).rstrip("/")
        if issuer != settings.TOOLHUB_SSO_ISSUER:
            # OpenID Connect Discovery 1.0, 4.3: the document must name the issuer asked.
            raise OAuth2Error(
                "The provider's discovery document names another issuer than TOOLHUB_SSO_ISSUER."
            )
        missing = [
            k for k in ("authorization_endpoint", "token_endpoint", "jwks_uri") if k not in config
        ]
        if missing:
            raise OAuth2Error(f"The provider's discovery document lacks {', '.join(missing)}.")
        return config

    def _get(self, url: str, **kwargs) -> dict:
        with get_adapter().get_requests_session() as session:
            response = session.get(url, **kwargs)
            response.raise_for_status()
            return response.json()

    def complete_login(self, request, app, token, **kwargs):
        config = self.openid_config
        state_id = get_request_param(request, "state") or ""
        id_claims = verify_id_token(
            (kwargs.get("response") or {}).get("id_token"),
            jwks=self._get(config["jwks_uri"]),
            issuer=config["issuer"],
            client_id=app.client_id,
            nonce=nonce_for(state_id),
            algorithms=config.get("id_token_signing_alg_values_supported"),
        )
        data = {"id_token": id_claims}
        if config.get("userinfo_endpoint"):
            userinfo = self._get(
                config["userinfo_endpoint"], headers={"Authorization": f"Bearer {token.token}"}
            )
            if not isinstance(userinfo, dict) or userinfo.get("sub") != id_claims["sub"]:
                # OpenID Connect Core 1.0, 5.3.2: userinfo about anyone else is not used.
                raise IdTokenRefused("Userinfo names another subject than the ID token.")
            data["userinfo"] = userinfo
        return self.get_provider().sociallogin_from_response(request, data)


class ToolHubOIDCProvider(OpenIDConnectProvider):
    oauth2_adapter_class = ToolHubOIDCAdapter

    def get_redirect_from_request_kwargs(self, request):
        """Only a sign-in, with the configured scopes: a request's own ``process``
        (connecting the provider's account to whoever is signed in), ``scope`` and
        ``auth_params`` are not taken."""
        kwargs = super().get_redirect_from_request_kwargs(request)
        kwargs["process"] = AuthProcess.LOGIN
        kwargs["scope"] = self.get_scope()
        kwargs["auth_params"] = self.get_auth_params()
        return kwargs

    def redirect(self, request, process, next_url=None, data=None, **kwargs):
        state_id = secrets.token_urlsafe(24)
        auth_params = dict(kwargs.pop("auth_params", None) or self.get_auth_params())
        auth_params["nonce"] = nonce_for(state_id)
        kwargs.pop("state_id", None)
        return super().redirect(
            request,
            process,
            next_url,
            data,
            auth_params=auth_params,
            state_id=state_id,
            **kwargs,
        )

    def extract_uid(self, data):
        return sso_claims.identity_uid(*sso_claims.identity(data))
