"""ToolHub as the OAuth 2.1 authorization server of its MCP endpoint and REST API
(django-oauth-toolkit; ``registry/oauth``, docs/security.md "OAuth sign-in for MCP clients").

A person signs in, consents once per client, and the client gets a token that acts for
that person at exactly one resource (``/mcp``, ``/mcp/<toolset>`` or ``/api/v1``): what
it may do is the person's rights, narrowed to the scopes consented. Headless agents may
use the client-credentials grant instead of a static token (the client acts as its agent).
"""

from __future__ import annotations

from toolhub.env import env_bool, env_float, env_int, env_list
from toolhub.settings.security import (
    SILENCED_SYSTEM_CHECKS,
    TOOLHUB_OIDC_RSA_PRIVATE_KEY,
    TOOLHUB_OIDC_RSA_PRIVATE_KEYS_INACTIVE,
)

# The scopes of ToolHub's resources (/mcp, /mcp/<toolset>, /api/v1), and what the consent
# page says of each: what a token may do there (registry.oauth.delegation).
TOOLHUB_OAUTH_SCOPES = {
    "tools:read": "See the tools you may run, with their descriptions and inputs",
    "tools:call": "Run those tools for you (each call governed and recorded as yours)",
}
# OpenID Connect's scopes: who the person is, in an ID token and at /oauth/userinfo/.
# They give no right at any resource. `openid` alone says only the person's id (sub);
# `profile` adds their name and username, `email` their email address.
TOOLHUB_OIDC_SCOPES = {
    "openid": "Know who you are (your ToolHub user id)",
    "profile": "See your name and username",
    "email": "See your email address, if you have one",
}
# Lifetimes (seconds). An access token is short-lived; its refresh token rotates at each
# use, and one presented twice revokes the whole family (a stolen copy was used).
TOOLHUB_OAUTH_ACCESS_TOKEN_SECONDS = env_int("TOOLHUB_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60)
TOOLHUB_OAUTH_REFRESH_TOKEN_SECONDS = env_int(
    "TOOLHUB_OAUTH_REFRESH_TOKEN_SECONDS", 30 * 24 * 3600, minimum=3600
)
# Dynamic client registration (RFC 7591) at /oauth/register/: open to any client, as MCP
# clients expect; an operator who registers clients in the admin only can turn it off.
TOOLHUB_OAUTH_REGISTRATION = env_bool("TOOLHUB_OAUTH_REGISTRATION", True)
# Client ID metadata documents: a client names itself by the https URL of its metadata,
# which ToolHub fetches (through the egress guard), caches and checks redirects against.
TOOLHUB_OAUTH_CLIENT_DOCUMENTS = env_bool("TOOLHUB_OAUTH_CLIENT_DOCUMENTS", True)
# Redirect URI schemes besides https and loopback http (RFC 8252 §7.1 private-use
# schemes of desktop clients, e.g. "cursor" or "vscode"): none unless listed.
TOOLHUB_OAUTH_REDIRECT_SCHEMES = env_list("TOOLHUB_OAUTH_REDIRECT_SCHEMES", [])
# People's own upstream accounts (tools of auth_type caller_account): how long ToolHub waits
# for an upstream provider's token or revocation endpoint (connecting, refreshing before a
# call, token exchange, disconnecting). A provider that hangs fails the call within it.
TOOLHUB_UPSTREAM_TOKEN_TIMEOUT = env_float("TOOLHUB_UPSTREAM_TOKEN_TIMEOUT", 10.0, minimum=0.1)

# How a client may authenticate at the token and revocation endpoints: public clients
# (most MCP clients: DCR with "none", metadata documents) by their client_id alone.
TOOLHUB_OAUTH_TOKEN_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]

OAUTH2_PROVIDER = {
    "SCOPES": {**TOOLHUB_OAUTH_SCOPES, **TOOLHUB_OIDC_SCOPES},
    # A client that names no scope gets the tool scopes; who the person is, only if asked.
    "DEFAULT_SCOPES": list(TOOLHUB_OAUTH_SCOPES),
    "OAUTH2_VALIDATOR_CLASS": "registry.oauth.validator.ToolHubOAuth2Validator",
    "ACCESS_TOKEN_GENERATOR": "registry.oauth.tokens.access_token",
    "REFRESH_TOKEN_GENERATOR": "registry.oauth.tokens.refresh_token",
    # OAuth 2.1: the authorization code with PKCE (S256 only), refresh tokens, and client
    # credentials for headless agents; no implicit or password grant.
    "PKCE_REQUIRED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token", "client_credentials"],
    # RFC 9700 (OAuth security best current practice), each as enforced behaviour:
    # S256 only, `iss` in every authorization response (RFC 9207), tokens stored hashed,
    # never accepted in a query string, no implicit or password grant.
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": TOOLHUB_OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": TOOLHUB_OAUTH_REFRESH_TOKEN_SECONDS,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    # The consent page asks unless the person's remembered consent covers the request
    # (registry.oauth.views); a client cannot skip it with approval_prompt=auto.
    "REQUEST_APPROVAL_PROMPT": "force",
    # https anywhere; http only to a loopback host (checked by the validator and the
    # client form); private-use schemes only as the operator lists them.
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http", *TOOLHUB_OAUTH_REDIRECT_SCHEMES],
    "ALLOWED_SCHEMES": ["https", "http", *TOOLHUB_OAUTH_REDIRECT_SCHEMES],
    "DCR_ENABLED": TOOLHUB_OAUTH_REGISTRATION,
    # A client may be its own metadata document (an https client_id), read through the
    # egress guard (executions/egress/cimd.py): ToolHub's outgoing connections all obey it.
    "CIMD_ENABLED": TOOLHUB_OAUTH_CLIENT_DOCUMENTS,
    "CIMD_METADATA_FETCHER": "executions.egress.cimd.GuardedMetadataFetcher",
    # Fetches at once per process: each holds a request thread up to its 5 s deadline.
    "CIMD_MAX_CONCURRENT_FETCHES": 2,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "APPLICATION_ADMIN_CLASS": "registry.admin.oauth.OAuthClientAdmin",
    "ACCESS_TOKEN_ADMIN_CLASS": "registry.admin.oauth.AccessTokenAdmin",
    "REFRESH_TOKEN_ADMIN_CLASS": "registry.admin.oauth.RefreshTokenAdmin",
    "GRANT_ADMIN_CLASS": "registry.admin.oauth.GrantAdmin",
    "ID_TOKEN_ADMIN_CLASS": "registry.admin.oauth.IDTokenAdmin",
    "OAUTH2_PROTECTED_RESOURCE_NAME": "ToolHub",
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": TOOLHUB_OAUTH_TOKEN_AUTH_METHODS,
    # OpenID Connect on the same server: ID tokens (RS256 only, every client) when the
    # client asks for `openid`, discovery at /.well-known/openid-configuration with the
    # origin as issuer (derived from the request, as RFC 8414's; no static issuer).
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": TOOLHUB_OIDC_RSA_PRIVATE_KEY,
    "OIDC_RSA_PRIVATE_KEYS_INACTIVE": TOOLHUB_OIDC_RSA_PRIVATE_KEYS_INACTIVE,
    "OIDC_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OIDC_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": TOOLHUB_OAUTH_TOKEN_AUTH_METHODS,
    # An ID token says who signed in, for as long as the access token issued with it.
    "ID_TOKEN_EXPIRE_SECONDS": TOOLHUB_OAUTH_ACCESS_TOKEN_SECONDS,
}
# The toolkit's own models, named as its swappable settings (Django resolves a foreign key
# to them, such as a consent's client, through these names).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"  # noqa: S105 - model names
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"  # noqa: S105
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"  # noqa: S105
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
# The toolkit warns that http redirect URIs are allowed at all: ToolHub allows them to a
# loopback host only (RFC 8252 §7.3, desktop MCP clients' local listeners), which its
# validator and client form enforce (registry/oauth/validator.py, redirect_refusal).
SILENCED_SYSTEM_CHECKS = [*SILENCED_SYSTEM_CHECKS, "oauth2_provider.W008"]
