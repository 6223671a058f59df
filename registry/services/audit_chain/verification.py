"""Verifying the whole audit log: checkpoint, chain walk, head and other checks."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import timedelta

from django.utils import timezone

from registry.models import AuditChainHead, AuditCheckpoint, AuditEvent
from registry.services.audit_chain.hashing import GENESIS
from registry.services.audit_chain.record_checks import (
    _record_checks,
    duplicate_identities,
    unsealed_forgeries,
)
from registry.services.audit_chain.report import Problem, VerifyReport
from registry.services.audit_chain.walking import walk_chain
from registry.services.audit_checkpoint import (
    checkpoint_forgery,
    export_findings,
)


def _checkpoint_problem(report: VerifyReport) -> Problem | None:
    """A checkpoint ToolHub did not write, or an altered export; an export that cannot be
    read here is a warning (the removed events were not checked)."""
    forged = checkpoint_forgery()
    if forged is not None:
        return Problem("forged_checkpoint", forged[0], None, forged[1])
    for altered, sequence, message in export_findings():
        if altered:
            return Problem("export_altered", sequence, None, message)
        report.warnings.append(message)
    return None


def audit_verify(*, from_checkpoint: bool = True, findings_limit: int = 0) -> VerifyReport:
    """Recompute the chain and name the first event that was altered, deleted, inserted or moved.

    With ``findings_limit``, every check beyond the walk runs to the end (even after a
    broken chain) and up to that many of their problems are kept in ``findings``: the
    records a verification run flags in the admin."""
    report = VerifyReport()
    report.problem = _checkpoint_problem(report)
    if report.problem is not None:
        report.ok = False
        return report
    _walk_into(report, from_checkpoint)
    report.problem = report.problem or _head_problem(report)
    stale = AuditEvent.objects.filter(
        sequence__isnull=True, occurred_at__lt=timezone.now() - timedelta(minutes=5)
    ).count()
    if stale:
        report.warnings.append(
            f"{stale} event(s) older than five minutes are not sealed yet: is the sealer running?"
        )
    if findings_limit:
        report.findings = list(itertools.islice(_other_problems(), findings_limit))
        report.problem = report.problem or next(iter(report.findings), None)
    else:
        report.problem = report.problem or next(_other_problems(), None)
    report.ok = report.problem is None
    return report


def _walk_into(report: VerifyReport, from_checkpoint: bool) -> None:
    """Walk the chain from the latest checkpoint (or the start) and note what it found."""
    start_sequence, expected_prev = 0, GENESIS
    checkpoint = AuditCheckpoint.objects.order_by("-sequence").first() if from_checkpoint else None
    if checkpoint is not None:
        start_sequence, expected_prev = checkpoint.sequence, checkpoint.hash
        report.checkpoint = checkpoint.sequence
    report.started_at_sequence = start_sequence
    walk = walk_chain(start_sequence, expected_prev)
    report.problem, report.checked = walk.problem, walk.checked
    report.head_sequence, report.head_hash = walk.last_sequence, walk.last_hash
    problem = report.problem
    if (
        not from_checkpoint
        and problem is not None
        and problem.kind == "missing"
        and problem.sequence == start_sequence + 1
    ):
        removed = AuditCheckpoint.objects.order_by("-sequence").first()
        if removed is not None:
            problem.message += (
                f" Retention removed events up to #{removed.sequence} (checkpoint, export "
                f"{removed.export_path}): verify from the checkpoint (without --from-start) "
                "and check the removed events against that export."
            )


def _head_problem(report: VerifyReport) -> Problem | None:
    """The chain ends before the sealed head: its latest events were deleted."""
    head = AuditChainHead.objects.filter(pk=1).first()
    if head is None or head.sequence <= report.head_sequence:
        return None
    return Problem(
        "missing",
        report.head_sequence + 1,
        None,
        f"The chain ends at #{report.head_sequence} but was sealed up to #{head.sequence}: "
        "the latest events were deleted.",
    )


def _other_problems() -> Iterator[Problem]:
    """Forged rows outside the chain, copied identities, then the apps' record checks."""
    for check in (unsealed_forgeries, duplicate_identities, *_record_checks):
        yield from check()
