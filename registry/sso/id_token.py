"""Verifying an ID token: signature, issuer, audience, times and nonce.

OpenID Connect Core 1.0, section 3.1.3.7. The signature is checked against the key
the provider publishes (``jwks_uri`` of its discovery document) under the token's
``kid``, with an asymmetric algorithm the provider says it signs ID tokens with;
``none`` and the HMAC algorithms (keyed with the client secret) are refused.
"""

from __future__ import annotations

import hmac
import json

import jwt
from allauth.socialaccount.providers.oauth2.client import OAuth2Error

# Signatures only the provider's private key can make.
ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
# Clock skew allowed between ToolHub and the provider, in seconds.
LEEWAY = 60
REQUIRED_CLAIMS = ["iss", "sub", "aud", "exp", "iat"]


class IdTokenRefused(OAuth2Error):
    """An ID token ToolHub does not accept; the message says why (never the token)."""


def _algorithm(header: dict, supported) -> str:
    alg = header.get("alg")
    allowed = ASYMMETRIC & set(supported or ["RS256"])
    if alg not in allowed:
        raise IdTokenRefused(
            f"ID token signed with {alg!r}: ToolHub accepts {sorted(allowed)} (what the "
            "provider publishes, asymmetric only)."
        )
    return alg


def _key(header: dict, alg: str, jwks: dict) -> jwt.PyJWK:
    """The published key the token names (its ``kid``; the only signing key when it
    names none)."""
    kid = header.get("kid")
    keys = [
        k
        for k in (jwks or {}).get("keys", [])
        if isinstance(k, dict)
        and k.get("use", "sig") == "sig"
        and k.get("alg", alg) == alg
        and (kid is None or k.get("kid") == kid)
    ]
    if len(keys) != 1:
        raise IdTokenRefused(
            f"ID token names key {kid!r}, which the provider's key set does not hold "
            "(once, for signing)."
        )
    try:
        return jwt.PyJWK(keys[0], algorithm=alg)
    except jwt.PyJWTError as exc:
        raise IdTokenRefused(f"The provider's key {kid!r} cannot be read ({exc}).") from None


def verify_id_token(
    token: str,
    *,
    jwks: dict,
    issuer: str,
    client_id: str,
    nonce: str,
    algorithms=None,
) -> dict:
    """The claims of ``token`` once every check passes; ``IdTokenRefused`` otherwise."""
    if not isinstance(token, str) or not token:
        raise IdTokenRefused("The token response holds no ID token.")
    try:
        header = jwt.get_unverified_header(token)
    except (jwt.PyJWTError, json.JSONDecodeError, UnicodeDecodeError):
        raise IdTokenRefused("The ID token is not a signed JWT.") from None
    alg = _algorithm(header, algorithms)
    key = _key(header, alg, jwks)
    try:
        claims = jwt.decode(
            token,
            key=key,
            algorithms=[alg],
            audience=client_id,
            issuer=issuer,
            leeway=LEEWAY,
            options={"require": REQUIRED_CLAIMS, "verify_signature": True},
        )
    except jwt.InvalidSignatureError:
        raise IdTokenRefused("The ID token's signature does not verify.") from None
    except jwt.InvalidAudienceError:
        raise IdTokenRefused("The ID token was issued for another client (aud).") from None
    except jwt.InvalidIssuerError:
        raise IdTokenRefused("The ID token was issued by another issuer (iss).") from None
    except jwt.ExpiredSignatureError:
        raise IdTokenRefused("The ID token has expired.") from None
    except jwt.PyJWTError as exc:
        raise IdTokenRefused(f"The ID token is not valid ({exc}).") from None
    _check_authorized_party(claims, client_id)
    if not hmac.compare_digest(str(claims.get("nonce", "")), nonce):
        raise IdTokenRefused(
            "The ID token's nonce is not the one this sign-in sent (a replayed or injected token)."
        )
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise IdTokenRefused("The ID token names no subject (sub).")
    return claims


def _check_authorized_party(claims: dict, client_id: str) -> None:
    """A token for several audiences must say it was issued to this client (azp)."""
    aud = claims.get("aud")
    azp = claims.get("azp")
    several = isinstance(aud, list) and len(aud) > 1
    if (several or azp is not None) and azp != client_id:
        raise IdTokenRefused("The ID token was issued to another client (azp).")
