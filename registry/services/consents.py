"""A person's consents to OAuth clients (``registry.models.Consent``): given on the consent
page, revoked by the person ("My connections") or a platform admin, with every token the
client holds for the person at that resource."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_grant_model,
    get_refresh_token_model,
)

from registry.models import Consent
from registry.policy import policy_check
from registry.services.audit import audit_record


def consent_snapshot(consent: Consent) -> dict:
    return {
        "person": consent.person.get_username(),
        "client_id": consent.client.client_id,
        "client": consent.client.name,
        "resource": consent.resource,
        "scopes": consent.scopes,
        "revoked_at": consent.revoked_at,
    }


def live_consent(*, person, client, resource: str) -> Consent | None:
    return Consent.objects.filter(
        person=person, client=client, resource=resource, revoked_at__isnull=True
    ).first()


@transaction.atomic
def consent_give(*, person, client, resource: str, scopes) -> Consent:
    """Remember that ``person`` lets ``client`` act for them at ``resource`` with ``scopes``
    (a wider consent replaces the live one: what the person agreed to last holds)."""
    before = live_consent(person=person, client=client, resource=resource)
    if before is not None:
        if before.covers(scopes) and set(scopes) == set(before.scopes):
            return before
        before.revoked_at, before.revoked_by = timezone.now(), person
        before.save(update_fields=["revoked_at", "revoked_by"])
        if not set(before.scopes) <= set(scopes):  # narrower now: the wider tokens go
            # (not the code just issued for this very consent; an older, wider code's
            # token would act for no one: it is checked against the consent on use)
            revoke_client_tokens(person=person, client=client, resource=resource, codes=False)
    consent = Consent.objects.create(
        person=person, client=client, resource=resource, scopes=sorted(set(scopes))
    )
    audit_record(
        actor=person,
        action="oauth.consent_given",
        target=consent,
        before=consent_snapshot(before) if before is not None else None,
        after=consent_snapshot(consent),
    )
    return consent


@transaction.atomic
def consent_revoke(*, actor, consent: Consent) -> Consent:
    """Withdraw ``consent``: it and every token its client holds for its person there end
    now (the next call with one is refused)."""
    policy_check(actor=actor, action="consent.revoke", owner=consent.person)
    consent = Consent.objects.select_for_update().get(pk=consent.pk)
    if consent.revoked_at is not None:
        return consent
    before = consent_snapshot(consent)
    consent.revoked_at, consent.revoked_by = timezone.now(), actor
    consent.save(update_fields=["revoked_at", "revoked_by"])
    revoked = revoke_client_tokens(
        person=consent.person, client=consent.client, resource=consent.resource
    )
    audit_record(
        actor=actor,
        action="oauth.consent_revoked",
        target=consent,
        before=before,
        after={**consent_snapshot(consent), "tokens_revoked": revoked},
    )
    return consent


def _for(token, resource: str) -> bool:
    # Every grant and token names its resource as compared (registry.oauth.resources):
    # the consent page, the remembered consent and client credentials all write it so.
    return resource in (token.resource or [])


def revoke_client_tokens(*, person, client, resource: str, codes: bool = True) -> int:
    """Revoke the access and refresh tokens (and, with ``codes``, the unused codes)
    ``client`` holds for ``person`` at ``resource``; how many tokens."""
    grants = get_grant_model().objects.filter(user=person, application=client) if codes else []
    for grant in grants:
        if _for(grant, resource):
            grant.delete()
    refresh = [
        token
        for token in get_refresh_token_model().objects.filter(
            user=person, application=client, revoked__isnull=True
        )
        if _for(token, resource)
    ]
    for token in refresh:
        token.revoke()  # and its access token
    access = [
        token
        for token in get_access_token_model().objects.filter(user=person, application=client)
        if _for(token, resource)
    ]
    for token in access:
        token.revoke()
    return len(access) + len(refresh)
