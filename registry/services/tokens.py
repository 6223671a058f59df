"""Issuing and revoking API tokens."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from registry.models import Agent, ApiToken
from registry.models.tokens import generate_token, hash_token
from registry.policy import policy_check
from registry.services.audit import audit_record
from registry.services.platform_admins import _keep_a_platform_admin, platform_admins_remain
from registry.services.validation import raise_invalid

# Tokens


def _check_token_write(actor, user) -> None:
    """Platform admins manage every token; an agent's owner manages the agent's (never
    another agent's, nor a person's: a token acts with its user's rights)."""
    agent = Agent.objects.filter(user_id=user.pk).select_related("owner").first()
    policy_check(actor=actor, action="token.write", owner=agent.owner if agent else None)


def token_snapshot(token: ApiToken) -> dict:
    return {
        "id": token.pk,
        "user": token.user.username,
        "name": token.name,
        "prefix": token.prefix,
        "expires_at": token.expires_at,
        "revoked_at": token.revoked_at,
    }


@transaction.atomic
def token_issue(
    *, actor, user, name: str = "", expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """Create a token for ``user``. Returns the row and the raw token: show it once, never store it.

    Without ``expires_at`` a token lives ``TOOLHUB_TOKEN_DEFAULT_DAYS`` (90 by
    default; 0: until revoked). With ``TOOLHUB_TOKEN_MAX_DAYS`` set, a token expires at most that many days
    ahead (without an expiry, or with a later one, it gets that one); tokens issued
    before the setting stop that many days after they were issued (authentication).
    """
    _check_token_write(actor, user)
    now = timezone.now()
    if expires_at is not None and expires_at <= now:
        raise_invalid(
            [{"field": "expires_at", "message": "Must be in the future.", "code": "invalid"}]
        )
    default_days = getattr(settings, "TOOLHUB_TOKEN_DEFAULT_DAYS", 0)
    if expires_at is None and default_days:
        expires_at = now + timedelta(days=default_days)
    max_days = getattr(settings, "TOOLHUB_TOKEN_MAX_DAYS", None)
    if max_days:
        # Brought within the cap, never refused: the answer shows the expiry it got.
        latest = now + timedelta(days=max_days)
        expires_at = latest if expires_at is None else min(expires_at, latest)
    if len(name) > 100:
        raise_invalid([{"field": "name", "message": "At most 100 characters.", "code": "invalid"}])
    raw = generate_token()
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=raw[:10],
        token_hash=hash_token(raw),
        expires_at=expires_at,
        created_by=actor if getattr(actor, "pk", None) else None,
    )
    audit_record(actor=actor, action="token.issued", target=token, after=token_snapshot(token))
    return token, raw


@transaction.atomic
def token_revoke(*, actor, token: ApiToken) -> ApiToken:
    """Revoke ``token`` (once); refused when it is the last way the last platform admin
    who cannot log in to the admin could act."""
    _check_token_write(actor, token.user)
    had_admins = platform_admins_remain()
    claimed = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    _keep_a_platform_admin(had_admins)
    token.refresh_from_db()
    if claimed:
        audit_record(actor=actor, action="token.revoked", target=token, after=token_snapshot(token))
    return token
