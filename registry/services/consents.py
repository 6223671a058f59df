"""A person's consents to OAuth clients (``registry.models.Consent``): given on the consent
page, revoked by the person ("My connections") or a platform admin, with every token the
client holds for the person at that resource."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

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


def revoke_client_tokens(*, person, client, resource: str) -> int:
    """Revoke the access and refresh tokens ``client`` holds for ``person`` at ``resource``
    (how many)."""
    refresh = [
        token
        for token in get_refresh_token_model().objects.filter(
            user=person, application=client, revoked__isnull=True
        )
        if resource in (token.resource or [])
    ]
    for token in refresh:
        token.revoke()  # and its access token
    access = [
        token
        for token in get_access_token_model().objects.filter(user=person, application=client)
        if resource in (token.resource or [])
    ]
    for token in access:
        token.revoke()
    return len(access) + len(refresh)
