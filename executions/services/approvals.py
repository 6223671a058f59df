"""Human approval of individual calls: decide once, four eyes, bound to the arguments."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from executions.models import Approval, ApprovalStatus, Execution, ExecutionStatus
from executions.services import notify
from executions.services.pipeline import enqueue
from executions.services.records import audit_execution, input_hash
from registry import access
from registry.models import Action, Tool
from registry.services.audit import audit_record
from toolhub.exceptions import Conflict, InvalidInput, NotFound, PermissionDenied

logger = logging.getLogger(__name__)


def approvals_visible_to(user) -> QuerySet[Approval]:
    """Approvers see the calls of tools they may approve; reviewers and platform admins see all."""
    qs = Approval.objects.select_related(
        "execution", "execution__tool", "execution__agent", "execution__agent__owner", "decided_by"
    )
    if access.is_reviewer(user) or access.is_platform_admin(user):
        return qs
    tools = access.restrict(Tool.objects.all(), user, Action.APPROVE)
    return qs.filter(execution__tool__in=tools)


def may_decide(user, approval: Approval) -> str | None:
    """Why ``user`` may not decide on ``approval`` (None when they may)."""
    execution = approval.execution
    if not access.can(user, Action.APPROVE, execution.tool):
        return "You may not approve calls of this tool."
    if execution.principal_id == user.pk:
        return "Four eyes: you cannot decide on your own call."
    if execution.agent_id and execution.agent.owner_id == user.pk:
        return "Four eyes: you own the agent that made this call."
    if getattr(user, "agent", None) is not None:
        return "Agents cannot approve calls."
    return None


def _approval_snapshot(approval: Approval) -> dict:
    return {
        "approval_id": str(approval.pk),
        "execution_id": str(approval.execution_id),
        "tool": approval.execution.tool_name,
        "status": approval.status,
        "decided_by": approval.decided_by_name,
        "reason": approval.reason,
        "input_hash": approval.input_hash,
    }


def approval_decide(*, actor, approval: Approval, approve: bool, reason: str = "") -> Approval:
    """Approve (the call is queued and runs) or reject (with a reason). Exactly one decision wins."""
    refusal = may_decide(actor, approval)
    if refusal:
        raise PermissionDenied(
            refusal, code="four_eyes" if "Four eyes" in refusal else "permission_denied"
        )
    reason = (reason or "").strip()
    if not approve and not reason:
        raise InvalidInput(
            "A rejection needs a reason.",
            details=[
                {"field": "reason", "message": "Required when rejecting.", "code": "required"}
            ],
        )
    if len(reason) > 2000:
        raise InvalidInput(
            "The reason is too long (at most 2000 characters).",
            details=[
                {"field": "reason", "message": "At most 2000 characters.", "code": "max_length"}
            ],
        )
    now = timezone.now()
    execution = approval.execution
    with transaction.atomic():
        if approve:
            # The arguments the approver saw are the ones that run.
            current = Execution.objects.values_list("input_data", flat=True).get(pk=execution.pk)
            if input_hash(current) != approval.input_hash:
                raise Conflict(
                    "The call's arguments changed after the request; it cannot be approved.",
                    code="arguments_changed",
                )
        won = Approval.objects.filter(
            pk=approval.pk, status=ApprovalStatus.PENDING, expires_at__gt=now
        ).update(
            status=ApprovalStatus.APPROVED if approve else ApprovalStatus.REJECTED,
            decided_by=actor,
            decided_by_name=actor.get_username(),
            decided_at=now,
            reason=reason,
        )
        approval.refresh_from_db()
        if not won:
            who = f" by {approval.decided_by_name}" if approval.decided_by_name else ""
            raise Conflict(f"This call was already {approval.status}{who}.", code="already_decided")
        if approve:
            Execution.objects.filter(
                pk=execution.pk, status=ExecutionStatus.PENDING_APPROVAL
            ).update(status=ExecutionStatus.QUEUED, queued_at=now)
        else:
            Execution.objects.filter(
                pk=execution.pk, status=ExecutionStatus.PENDING_APPROVAL
            ).update(
                status=ExecutionStatus.REJECTED,
                finished_at=now,
                error_type="rejected",
                error_message=f"Rejected by {actor.get_username()}: {reason}",
                sealed_secrets="",
            )
        execution.refresh_from_db()
        audit_record(
            actor=actor,
            action="approval.approved" if approve else "approval.rejected",
            target=approval,
            after=_approval_snapshot(approval),
        )
        audit_execution(execution, f"execution.{execution.status}", actor=actor)
        if approve:
            tool = execution.tool
            transaction.on_commit(lambda: enqueue(execution, tool))
    if not approve:
        notify.notify_done(execution.pk)
        _webhook(execution)
    return approval


def approvals_expire(*, now=None) -> int:
    """Expire undecided approvals past their deadline (periodic task)."""
    now = now or timezone.now()
    expired = 0
    for approval in Approval.objects.filter(
        status=ApprovalStatus.PENDING, expires_at__lte=now
    ).select_related("execution"):
        with transaction.atomic():
            won = Approval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
                status=ApprovalStatus.EXPIRED, decided_at=now
            )
            if not won:
                continue
            Execution.objects.filter(
                pk=approval.execution_id, status=ExecutionStatus.PENDING_APPROVAL
            ).update(
                status=ExecutionStatus.EXPIRED,
                finished_at=now,
                error_type="approval_expired",
                error_message="No approver decided before the approval expired.",
                sealed_secrets="",
            )
            approval.refresh_from_db()
            execution = Execution.objects.get(pk=approval.execution_id)
            audit_record(
                actor=None,
                action="approval.expired",
                target=approval,
                after=_approval_snapshot(approval),
            )
            audit_execution(execution, "execution.expired", actor=None)
            expired += 1
        notify.notify_done(approval.execution_id)
        _webhook(execution)
    return expired


def approval_for(user, approval_id) -> Approval:
    approval = approvals_visible_to(user).filter(pk=approval_id).first()
    if approval is None:
        raise NotFound("Approval not found.", code="approval_not_found")
    return approval


def _webhook(execution: Execution) -> None:
    from executions.services.webhooks import notify_agent

    notify_agent(execution)


__all__ = [
    "approval_decide",
    "approval_for",
    "approvals_expire",
    "approvals_visible_to",
    "may_decide",
]
