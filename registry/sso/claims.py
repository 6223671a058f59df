"""What ToolHub reads from a sign-in's verified claims.

``data`` is what the provider hands allauth: ``{"id_token": claims, "userinfo": claims}``
(userinfo only when the provider has that endpoint; its ``sub`` was checked against the
ID token's). The ID token is preferred: it is signed.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model

from registry.services.agents import AGENT_USERNAME_PREFIX

logger = logging.getLogger(__name__)

UID_MAX_CHARS = 191  # allauth's SocialAccount.uid
USERNAME_MAX_CHARS = 150
_NOT_IN_USERNAMES = re.compile(r"[^\w.@+-]")


def id_claims(data: dict) -> dict:
    return data.get("id_token") or {}


def identity(data: dict) -> tuple[str, str]:
    """``(issuer, subject)`` of the verified ID token."""
    claims = id_claims(data)
    return str(claims.get("iss", "")), str(claims.get("sub", ""))


def identity_uid(issuer: str, subject: str) -> str:
    """The key a person's link is stored under: issuer and subject together, so two
    providers' subjects never meet (an issuer holds no '#': RFC 8414). Hashed when it
    would not fit allauth's column."""
    uid = f"{issuer}#{subject}"
    if len(uid) > UID_MAX_CHARS:
        uid = "sha256:" + hashlib.sha256(uid.encode()).hexdigest()
    return uid


def groups(data: dict) -> list[str]:
    """The person's groups, from the configured claim of the ID token, else of userinfo.
    A claim that is missing lists no group (so the mapped roles are taken away)."""
    name = settings.TOOLHUB_SSO_GROUPS_CLAIM
    for source in ("id_token", "userinfo"):
        claims = data.get(source) or {}
        if name in claims:
            value = claims[name]
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list):
                return []
            return [g for g in value if isinstance(g, str)]
    logger.warning(
        "single sign-on: the identity provider sent no %r claim; the person's mapped roles "
        "are taken away (see docs/operations.md, 'Single sign-on')",
        name,
    )
    return []


def profile(data: dict) -> dict:
    """E-mail and names, userinfo's over the ID token's."""
    merged = {**(data.get("id_token") or {}), **(data.get("userinfo") or {})}
    first, last = merged.get("given_name"), merged.get("family_name")
    name = merged.get("name")
    if isinstance(name, str) and not (first or last):
        first, _, last = name.strip().partition(" ")
    return {"email": merged.get("email"), "first_name": first, "last_name": last}


def _base_username(data: dict) -> str:
    merged = {**(data.get("id_token") or {}), **(data.get("userinfo") or {})}
    email = merged.get("email")
    for candidate in (
        merged.get("preferred_username"),
        email.split("@", 1)[0] if isinstance(email, str) else None,
        merged.get("name"),
    ):
        if isinstance(candidate, str):
            base = _NOT_IN_USERNAMES.sub("", candidate.strip().replace(" ", "."))
            if base:
                break
    else:
        base = "person"
    if base.lower().startswith(AGENT_USERNAME_PREFIX):
        # Agents' users are named agent.<name>: a person never looks like one.
        base = "person." + base[len(AGENT_USERNAME_PREFIX) :]
    return base[: USERNAME_MAX_CHARS - 8]


def unique_username(data: dict) -> str:
    """A username for a new person: from their claims, made safe and unused."""
    users = get_user_model().objects
    base = _base_username(data)
    candidate = base
    for number in range(2, 100):
        if not users.filter(username__iexact=candidate).exists():
            return candidate
        candidate = f"{base}-{number}"
    return f"{base}-{secrets.token_hex(3)}"
