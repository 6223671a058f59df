"""Reads of the audit log's verification runs ("Verify now"): which finished run the
admin's integrity panel trusts, and the records it flags."""

from __future__ import annotations

from django.db.models import Q

from registry.models import (
    FINISHED_VERIFICATIONS,
    AuditChainHead,
    AuditEvent,
    VerificationFinding,
    VerificationRun,
    VerificationStatus,
)
from registry.services.audit_auth import MAC_FIELDS, mac_valid, signing_keys

# How many finished runs the panel looks back through for one its event vouches for.
_VOUCHED_LOOK_BACK = 20


def verification_latest() -> VerificationRun | None:
    """The latest run that finished (passed or failed) and whose result its authenticated
    ``audit.verified`` event vouches for: the one whose findings are flagged. The runs
    move forward only (migration 0020), but a run walked to ``passed`` by someone with
    the application's database role has no such event: it is passed over."""
    finished = VerificationRun.objects.filter(status__in=FINISHED_VERIFICATIONS).order_by("-id")
    for run in finished[:_VOUCHED_LOOK_BACK]:
        if _vouched(run):
            return run
    return None


def _vouched(run: VerificationRun) -> bool:
    """Whether an authentic ``audit.verified`` event records this run's result."""
    events = AuditEvent.objects.filter(
        action="audit.verified",
        target_type=VerificationRun._meta.label_lower,
        target_id=str(run.pk),
    ).values("id", "mac", *MAC_FIELDS)
    keyed = bool(signing_keys())
    for row in events:
        after = row["after"] or {}
        if (
            (not keyed or mac_valid(row))
            and after.get("status") == run.status
            and after.get("head_hash") == run.head_hash
            and after.get("checked") == run.checked
            and after.get("records_flagged") == run.findings.count()
        ):
            return True
    return False


def verification_state() -> dict:
    """What the admin's integrity panel shows: the latest finished run, a run still under
    way or newer and broken (``error``), and the chain's head now."""
    latest = verification_latest()
    newer = VerificationRun.objects.order_by("-id")
    if latest is not None:
        newer = newer.filter(pk__gt=latest.pk)
    return {
        "latest": latest,
        "pending": newer.filter(
            status__in=[VerificationStatus.QUEUED, VerificationStatus.RUNNING]
        ).first(),
        "broken": newer.filter(status=VerificationStatus.ERROR).first(),
        "head": AuditChainHead.objects.filter(pk=1).first(),
        "flagged": (
            VerificationFinding.objects.filter(run=latest).count() if latest is not None else 0
        ),
    }


def verification_findings_for(target_type: str, target_id: str) -> list[VerificationFinding]:
    """What the latest finished run found wrong with one record (empty: nothing)."""
    latest = verification_latest()
    if latest is None:
        return []
    condition = Q(target_type=target_type, target_id=str(target_id))
    if target_type == "registry.auditevent" and str(target_id).isdigit():
        condition |= Q(event_id=int(target_id))
    return list(VerificationFinding.objects.filter(condition, run=latest))


def verification_flagged_ids(target_type: str) -> list[str]:
    """The ids of the records of ``target_type`` the latest finished run found altered."""
    latest = verification_latest()
    if latest is None:
        return []
    found = VerificationFinding.objects.filter(run=latest, target_type=target_type)
    return sorted(set(found.values_list("target_id", flat=True)))
