"""Verify now: a run of ``audit_verify`` asked for from the admin, done by a worker.

One mechanism: the run calls the same ``audit_verify`` as the management
command (the chain walk, then every record check), keeps what it found, and
records its result as an audit event (``audit.verified``), so a verification is
itself on the record. The records it names are flagged in the admin while it is
the latest finished run (``registry.integrity``).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from registry import authorization
from registry.models import (
    VerificationFinding,
    VerificationRun,
    VerificationStatus,
)
from registry.services.audit import audit_record
from registry.services.audit_chain import Problem, audit_seal_all, audit_verify
from toolhub.celery import app
from toolhub.exceptions import PermissionDenied

logger = logging.getLogger(__name__)

# Records a run keeps (and so flags); past this it says so (``findings_truncated``).
VERIFICATION_FINDINGS_KEPT = 500
_AUDIT_EVENT = "registry.auditevent"
VERIFY_TASK = "registry.verify_audit_log"
ABANDONED_AFTER = timedelta(minutes=30)


def may_verify(user) -> bool:
    """Reviewers and platform admins may start a verification."""
    return authorization.is_reviewer(user) or authorization.is_platform_admin(user)


@transaction.atomic
def verification_request(*, actor) -> tuple[VerificationRun, bool]:
    """Queue a verification run (the worker runs it after the commit); a run already
    queued or running is returned instead of a second one: ``(run, started)``."""
    if not may_verify(actor):
        raise PermissionDenied("Only reviewers and platform admins may verify the audit log.")
    unfinished = VerificationRun.objects.select_for_update().filter(
        status__in=[VerificationStatus.QUEUED, VerificationStatus.RUNNING]
    )
    # A run whose worker died never finishes: after a while it no longer blocks another.
    unfinished.filter(requested_at__lt=timezone.now() - ABANDONED_AFTER).update(
        status=VerificationStatus.ERROR,
        finished_at=timezone.now(),
        problem_kind="error",
        problem_message="The verification did not finish (its worker stopped).",
    )
    pending = unfinished.order_by("-id").first()
    if pending is not None:
        return pending, False
    run = VerificationRun.objects.create(
        requested_by=actor if actor.pk else None, requested_by_name=actor.get_username()
    )
    transaction.on_commit(lambda: _send(run.pk))
    return run, True


def _send(run_id: int) -> None:
    """Hand the run to a worker (by task name: tasks import services, not the other way
    round); in the embedded mode the task runs here and now."""
    try:
        app.tasks[VERIFY_TASK].apply_async(args=[run_id])
    except (KombuOperationalError, OSError):
        logger.exception("the broker did not take verification run %s", run_id)
        VerificationRun.objects.filter(pk=run_id, status=VerificationStatus.QUEUED).update(
            status=VerificationStatus.ERROR,
            finished_at=timezone.now(),
            problem_kind="error",
            problem_message="The task queue could not take the verification; try again later.",
        )


def verification_run(*, run_id: int) -> VerificationRun | None:
    """Run the queued verification ``run_id`` (None when it was claimed already)."""
    claimed = VerificationRun.objects.filter(pk=run_id, status=VerificationStatus.QUEUED).update(
        status=VerificationStatus.RUNNING, started_at=timezone.now()
    )
    if not claimed:
        return None
    run = VerificationRun.objects.get(pk=run_id)
    try:
        audit_seal_all()  # verify up to the latest events, as `audit_verify --seal`
        report = audit_verify(findings_limit=VERIFICATION_FINDINGS_KEPT + 1)
    except Exception as exc:  # a broken verifier is a result too: recorded, not lost
        logger.exception("verification run %s could not run", run_id)
        run.status = VerificationStatus.ERROR
        run.problem_kind = "error"
        run.problem_message = f"The verification could not run: {type(exc).__name__}."
        return _finish(run, [])
    run.status = VerificationStatus.PASSED if report.ok else VerificationStatus.FAILED
    run.checked, run.warnings = report.checked, report.warnings
    run.head_sequence, run.head_hash = report.head_sequence, report.head_hash
    if report.problem is not None:
        run.problem_kind, run.problem_message = report.problem.kind, report.problem.message
    problems = list(report.findings)
    if report.problem is not None and report.problem not in problems:
        problems.insert(0, report.problem)  # the chain walk's problem: an audit event
    run.findings_truncated = len(problems) > VERIFICATION_FINDINGS_KEPT
    return _finish(run, problems[:VERIFICATION_FINDINGS_KEPT])


def _finding(run: VerificationRun, problem: Problem) -> VerificationFinding:
    target_type, target_id = problem.target_type, problem.target_id
    if not target_type and problem.event_id is not None:
        target_type, target_id = _AUDIT_EVENT, str(problem.event_id)
    return VerificationFinding(
        run=run,
        kind=problem.kind,
        target_type=target_type,
        target_id=target_id,
        event_id=problem.event_id,
        sequence=problem.sequence,
        message=problem.message,
    )


@transaction.atomic
def _finish(run: VerificationRun, problems: list[Problem]) -> VerificationRun:
    # The findings first: the database takes them only from a run still running
    # (migration 0020), and the run is finished once, after them.
    VerificationFinding.objects.bulk_create([_finding(run, p) for p in problems])
    run.finished_at = timezone.now()
    run.save()
    audit_record(
        actor=run.requested_by,
        action="audit.verified",
        target=run,
        after={
            "status": run.status,
            "checked": run.checked,
            "head_sequence": run.head_sequence,
            "head_hash": run.head_hash,
            "problem_kind": run.problem_kind,
            "problem": run.problem_message,
            "records_flagged": len(problems),
            "requested_by": run.requested_by_name,
        },
    )
    return run
