"""The authorization server's two discovery documents, at the origin's root: RFC 8414
metadata (``/.well-known/oauth-authorization-server``) and OpenID Connect discovery
(``/.well-known/openid-configuration``).

Both are the toolkit's, with what it says differently from what ToolHub does put right.
The OpenID document is the RFC 8414 one with OpenID Connect's fields added, so the two
agree by construction (same issuer, endpoints, grant types, scopes and methods).
"""

from __future__ import annotations

import json

from django.http import JsonResponse
from oauth2_provider.models import AbstractApplication
from oauth2_provider.views import ConnectDiscoveryInfoView, OAuthServerMetadataView

# Every ID token is signed with ToolHub's RSA key (registry.oauth.validator.sign_id_tokens).
ID_TOKEN_ALGORITHMS = [AbstractApplication.RS256_ALGORITHM]
# The consent page's answers to OpenID Connect's prompt parameter (registry.oauth.views).
PROMPTS = ["none", "login", "consent"]


def _document(response) -> dict:
    return json.loads(response.content)


def _json(data: dict) -> JsonResponse:
    response = JsonResponse(data)
    response["Access-Control-Allow-Origin"] = "*"  # read by clients in a browser too
    return response


class ServerMetadataView(OAuthServerMetadataView):
    """RFC 8414 metadata. The introspection endpoint takes a confidential client's
    credentials (or a token with the ``introspection`` scope), never a bare client_id."""

    def get(self, request, *args, **kwargs):
        data = _document(super().get(request, *args, **kwargs))
        if "introspection_endpoint_auth_methods_supported" in data:
            data["introspection_endpoint_auth_methods_supported"] = [
                m for m in data["introspection_endpoint_auth_methods_supported"] if m != "none"
            ]
        return _json(data)


class OpenIDConfigurationView(ConnectDiscoveryInfoView):
    """OpenID Connect discovery: the RFC 8414 document plus the toolkit's OpenID fields
    (userinfo, jwks_uri, subject types, claims), with RS256 only and no request objects."""

    def get(self, request, *args, **kwargs):
        server = _document(ServerMetadataView().get(request))
        server.pop("issuer")  # derived from its own URL: the toolkit's OpenID issuer is used
        openid = _document(super().get(request, *args, **kwargs))
        return _json(
            {
                **openid,
                **server,
                "id_token_signing_alg_values_supported": ID_TOKEN_ALGORITHMS,
                "prompt_values_supported": PROMPTS,
                # Unsaid, request_uri would be taken as supported (OpenID Discovery §3).
                "request_parameter_supported": False,
                "request_uri_parameter_supported": False,
                "claims_parameter_supported": False,
            }
        )
