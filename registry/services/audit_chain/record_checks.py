"""Checks beyond the chain: forged unsealed events, duplicate identities, and apps' record checks."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from django.db.models import Count, F

from registry.canonical import time_form
from registry.models import AuditChainHead, AuditEvent
from registry.services.audit_chain.authenticity import _authentic
from registry.services.audit_chain.hashing import AUTH_FIELDS, CONTENT_FIELDS
from registry.services.audit_chain.report import Problem


def unsealed_forgeries() -> Iterator[Problem]:
    """Events the sealer refused, and unsealed ones it will refuse: not written by ToolHub."""
    head = AuditChainHead.objects.filter(pk=1).first()
    chain_authenticated = head is not None and head.authenticated_since is not None
    pending = (
        AuditEvent.objects.filter(sequence__isnull=True)
        .order_by("id")
        .values("sealed_at", *CONTENT_FIELDS, *AUTH_FIELDS)
    )
    chain_identified = head is not None and head.identified_since is not None
    for row in pending.iterator(chunk_size=1000):
        refused = row["sealed_at"] is not None
        if refused or not _authentic(
            row, chain_authenticated=chain_authenticated, chain_identified=chain_identified
        ):
            yield Problem(
                "forged",
                None,
                row["id"],
                f"Event id {row['id']} ({row['action']}, {time_form(row['occurred_at'])}) is not "
                "authentic: its authentication code is missing or wrong, so it was written "
                "behind ToolHub's back"
                + (" and the sealer refused it." if refused else " and will not be sealed."),
            )


def duplicate_identities() -> Iterator[Problem]:
    """Events that share their identity (``uid``) with an earlier one: copies. The unique
    constraint refuses them; this finds them where it was dropped (one grouped scan)."""
    shared = (
        AuditEvent.objects.filter(uid__isnull=False)
        .order_by()
        .values("uid")
        .annotate(holders=Count("id"))
        .filter(holders__gt=1)
        .values_list("uid", flat=True)
    )
    for uid in shared.iterator(chunk_size=100):
        rows = list(
            AuditEvent.objects.filter(uid=uid)
            .order_by(F("sequence").asc(nulls_last=True), "id")
            .values("id", "sequence", "action")
        )
        original, copy = rows[0], rows[1]
        where = f"#{copy['sequence']} " if copy["sequence"] is not None else ""
        yield Problem(
            "forged",
            copy["sequence"],
            copy["id"],
            f"Event {where}(id {copy['id']}, {copy['action']}) is a copy of event id "
            f"{original['id']} (the same uid {uid}): it was written behind ToolHub's back.",
        )


# Records whose audit events carry a hash of their content (executions: their
# ``content_hash``). The chain proves the events were not altered; these checks
# prove the records still say what their latest event recorded. Apps register
# theirs when ready (``registry`` never imports them).
_record_checks: list[Callable[[], Iterator[Problem]]] = []


def record_check_register(*checks: Callable[[], Iterator[Problem]]) -> None:
    """Install each ``check() -> problems`` (records that no longer match their events)."""
    for check in checks:
        if check not in _record_checks:
            _record_checks.append(check)
