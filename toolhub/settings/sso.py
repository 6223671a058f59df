"""Single sign-on: people sign in with the organisation's OpenID Connect identity provider.

With ``TOOLHUB_SSO_ISSUER`` unset, SSO is off: the admin's login page shows no button,
its routes answer 404 and its admin pages are hidden; local passwords work either way.
With it set, the client id and secret are required. How it works and what is verified:
docs/security.md ("Single sign-on"); the settings and examples: docs/operations.md.

The library is django-allauth's OpenID Connect provider (decision 0009), configured
here by constants: ToolHub's adapters (``registry.sso``) build its one app from these
settings at each request, never from the database, so the client secret stays in the
environment.
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from toolhub.env import env_str

# The issuer URL exactly as the provider names itself (its discovery document is at
# <issuer>/.well-known/openid-configuration). https, or http to a loopback address.
TOOLHUB_SSO_ISSUER = (env_str("TOOLHUB_SSO_ISSUER") or "").strip().rstrip("/")
TOOLHUB_SSO_CLIENT_ID = (env_str("TOOLHUB_SSO_CLIENT_ID") or "").strip()
TOOLHUB_SSO_CLIENT_SECRET = (env_str("TOOLHUB_SSO_CLIENT_SECRET") or "").strip()
# The button says "Sign in with <name>".
TOOLHUB_SSO_NAME = (env_str("TOOLHUB_SSO_NAME") or "").strip() or "single sign-on"
# The claim (of the ID token, else of userinfo) that lists the person's groups.
TOOLHUB_SSO_GROUPS_CLAIM = (env_str("TOOLHUB_SSO_GROUPS_CLAIM") or "").strip() or "groups"
# Scopes asked for, separated by spaces or commas; "openid" is always asked for.
_DEFAULT_SCOPES = "openid email profile"


def _scopes(raw: str) -> list[str]:
    scopes = [s for s in raw.replace(",", " ").split() if s]
    return ["openid", *(s for s in dict.fromkeys(scopes) if s != "openid")]


TOOLHUB_SSO_SCOPES = _scopes(env_str("TOOLHUB_SSO_SCOPES") or _DEFAULT_SCOPES)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_issuer(issuer: str) -> None:
    try:
        parts = urlsplit(issuer)
        host = parts.hostname or ""
    except ValueError:
        parts, host = None, ""
    if parts is None or not host or parts.query or parts.fragment:
        raise ImproperlyConfigured(
            "TOOLHUB_SSO_ISSUER must be the identity provider's issuer URL "
            "(https://idp.example.com/realms/acme), without query or fragment."
        )
    if parts.scheme != "https" and not (parts.scheme == "http" and _loopback(host)):
        raise ImproperlyConfigured(
            "TOOLHUB_SSO_ISSUER must use https (plain http only to a loopback address)."
        )


GROUP_ROLES_SHAPE = (
    'expected a JSON object of group name to a list of role names, or to {"roles": [...], '
    '"staff": true}, e.g. {"toolhub-admins": {"roles": ["platform-admin"], "staff": true}}'
)


def _group_entry(group: str, value) -> dict:
    if isinstance(value, list):
        value = {"roles": value}
    if not isinstance(value, dict) or set(value) - {"roles", "staff"}:
        raise ImproperlyConfigured(f"TOOLHUB_SSO_GROUP_ROLES: group {group!r}: {GROUP_ROLES_SHAPE}")
    roles = value.get("roles", [])
    staff = value.get("staff", False)
    if not isinstance(roles, list) or not all(isinstance(r, str) and r.strip() for r in roles):
        raise ImproperlyConfigured(
            f"TOOLHUB_SSO_GROUP_ROLES: group {group!r}: roles must be a list of role names."
        )
    if not isinstance(staff, bool):
        raise ImproperlyConfigured(
            f"TOOLHUB_SSO_GROUP_ROLES: group {group!r}: staff must be true or false."
        )
    if not roles and not staff:
        raise ImproperlyConfigured(
            f"TOOLHUB_SSO_GROUP_ROLES: group {group!r} gives nothing (no roles, not staff)."
        )
    return {"roles": sorted({r.strip() for r in roles}), "staff": staff}


def _group_roles(raw: str | None) -> dict[str, dict]:
    """``{group: {"roles": [role names], "staff": bool}}`` from the JSON variable."""
    if not raw or not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"TOOLHUB_SSO_GROUP_ROLES is not JSON ({exc.msg}).") from None
    if not isinstance(parsed, dict):
        raise ImproperlyConfigured(f"TOOLHUB_SSO_GROUP_ROLES: {GROUP_ROLES_SHAPE}")
    mapping = {}
    for group, value in parsed.items():
        if not group.strip():
            raise ImproperlyConfigured("TOOLHUB_SSO_GROUP_ROLES: a group name is empty.")
        mapping[group] = _group_entry(group, value)
    return mapping


# Which roles (and admin access) members of each identity-provider group get; more
# mappings are kept in the admin ("SSO group mappings"). Both apply.
TOOLHUB_SSO_GROUP_ROLES = _group_roles(env_str("TOOLHUB_SSO_GROUP_ROLES"))

if TOOLHUB_SSO_ISSUER:
    _check_issuer(TOOLHUB_SSO_ISSUER)
    # Named, never quoted: the secret is a secret, the id may sit next to it.
    _missing = [
        name
        for name, value in (
            ("TOOLHUB_SSO_CLIENT_ID", TOOLHUB_SSO_CLIENT_ID),
            ("TOOLHUB_SSO_CLIENT_SECRET", TOOLHUB_SSO_CLIENT_SECRET),
        )
        if not value
    ]
    if _missing:
        raise ImproperlyConfigured(
            f"TOOLHUB_SSO_ISSUER is set, so {' and '.join(_missing)} must be set too."
        )

# Pages that need a signed-in person (the OAuth consent page, My connections) send them
# to ToolHub's sign-in page: the admin login's look, password form and, with SSO on, the
# identity provider's button, for any active person (the admin's own login page takes
# staff only, and still serves the admin).
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "admin:index"

# django-allauth, held to what ToolHub uses: its OpenID Connect provider, no sign-up
# form, no e-mail (never sent, never used to find an account), no stored tokens.
ACCOUNT_ADAPTER = "registry.sso.adapters.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "registry.sso.adapters.SocialAccountAdapter"
SOCIALACCOUNT_PROVIDERS = {
    "openid_connect": {
        # ToolHub's provider: verifies every ID token's signature and nonce (decision 0009).
        "provider_class": "registry.sso.provider.ToolHubOIDCProvider",
        "OAUTH_PKCE_ENABLED": True,
    }
}
ACCOUNT_EMAIL_VERIFICATION = "none"
# People are found by issuer and subject, never by e-mail: two may share an address.
ACCOUNT_UNIQUE_EMAIL = False
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = False
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_EMAIL_REQUIRED = False
SOCIALACCOUNT_QUERY_EMAIL = False
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_STORE_TOKENS = False
# Starting a sign-in takes a POST (the button's form, with its CSRF token).
SOCIALACCOUNT_LOGIN_ON_GET = False
