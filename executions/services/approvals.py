"""Human approval of individual calls: decide once, four eyes, bound to the arguments."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from executions.models import Approval, ApprovalStatus, Execution, ExecutionStatus
from executions.services import integrity, notify, task_queue, transitions
from registry import authorization
from registry.models import Action, Tool
from registry.services.audit import audit_record
from toolhub.exceptions import Conflict, InvalidInput, NotFound, PermissionDenied

logger = logging.getLogger(__name__)


def approvals_visible_to(user) -> QuerySet[Approval]:
    """Who sees which approvals (with the calls' arguments).

    Reviewers and platform admins see all; a person sees the calls of tools
    they may approve, their own and their agents' (as with executions); an
    agent sees only its own calls (it can never decide, so other callers'
    arguments are none of its business, whatever rights its roles hold).
    """
    qs = Approval.objects.select_related(
        "execution", "execution__tool", "execution__agent", "execution__agent__owner", "decided_by"
    )
    if authorization.is_reviewer(user) or authorization.is_platform_admin(user):
        return qs
    if getattr(user, "agent", None) is not None:
        return qs.filter(execution__principal=user)
    tools = authorization.restrict(Tool.objects.all(), user, Action.APPROVE)
    return qs.filter(
        Q(execution__tool__in=tools)
        | Q(execution__principal=user)
        | Q(execution__agent__owner=user)
    )


@dataclass(frozen=True)
class DecisionRefusal:
    """Why a person may not decide on an approval: an error code and a message."""

    code: str
    message: str


def decision_refusal(user, approval: Approval) -> DecisionRefusal | None:
    """Why ``user`` may not decide on ``approval`` (None when they may)."""
    execution = approval.execution
    if getattr(user, "agent", None) is not None:  # whatever rights its roles hold
        return DecisionRefusal("permission_denied", "Agents cannot approve calls.")
    if not authorization.can(user, Action.APPROVE, execution.tool):
        return DecisionRefusal("permission_denied", "You may not approve calls of this tool.")
    if execution.principal_id == user.pk:
        return DecisionRefusal("four_eyes", "Four eyes: you cannot decide on your own call.")
    if execution.agent_id and execution.agent.owner_id == user.pk:
        return DecisionRefusal("four_eyes", "Four eyes: you own the agent that made this call.")
    if execution.agent_owner_id == user.pk:
        return DecisionRefusal(
            "four_eyes", "Four eyes: you owned the agent that made this call when it was made."
        )
    return None


def may_decide(user, approval: Approval) -> str | None:
    """Why ``user`` may not decide on ``approval``, as text (None when they may)."""
    refusal = decision_refusal(user, approval)
    return refusal.message if refusal else None


def approval_decide(*, actor, approval: Approval, approve: bool, reason: str = "") -> Approval:
    """Approve (the call is queued and runs) or reject (with a reason). Exactly one decision wins."""
    refusal = decision_refusal(actor, approval)
    if refusal:
        raise PermissionDenied(refusal.message, code=refusal.code)
    reason = _checked_reason(reason, approve)
    now = timezone.now()
    _check_still_open(approval, now)
    if approve and approval.status == ApprovalStatus.PENDING:
        _check_runnable(actor, approval, now)
    with transaction.atomic():
        # Checked again in the transaction that queues the call.
        if approve and _arguments_changed(approval):
            raise Conflict(
                "The call's arguments changed after the request; it cannot be approved.",
                code="arguments_changed",
            )
        _win_decision(actor, approval, approve, reason, now)
        execution = _apply_decision(actor, approval, approve, reason, now)
    if not approve:
        notify.notify_done(execution.pk)
        _webhook(execution)
    return approval


def _checked_reason(reason: str, approve: bool) -> str:
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
    return reason


def _check_still_open(approval: Approval, now) -> None:
    """Conflict when the approval expired or its call no longer waits for a decision."""
    expired_now = approval.status == ApprovalStatus.PENDING and approval.expires_at <= now
    if expired_now:
        _expire(approval, now)  # the periodic task may not have run yet (or at all)
    if expired_now or approval.status == ApprovalStatus.EXPIRED:
        # One answer whether the periodic task or this request noticed the deadline.
        raise Conflict(
            f"This approval expired at {approval.expires_at.isoformat()} without a decision; "
            "the call was not run.",
            code="approval_expired",
        )
    current = Execution.objects.values_list("status", flat=True).get(pk=approval.execution_id)
    if approval.status == ApprovalStatus.PENDING and current != ExecutionStatus.PENDING_APPROVAL:
        raise Conflict(
            f"The call is {current}; it can no longer be decided on.", code="not_pending"
        )


def _check_runnable(actor, approval: Approval, now) -> None:
    """Close the approval and its call (denied) when approving it must not run it."""
    why = _arguments_changed(approval)
    if why is not None:
        # Rewritten in the database: what the approver saw is not what was asked.
        _close_unrunnable(actor, approval, integrity.INTEGRITY_ERROR, why, now)
        raise Conflict(
            f"The call's arguments changed after the request; it cannot be approved "
            f"({why}). It was closed as denied.",
            code="arguments_changed",
        )
    unrunnable = _no_longer_allowed(approval.execution, since=approval.requested_at)
    if unrunnable is not None:
        reason_code, why = unrunnable
        _close_unrunnable(actor, approval, reason_code, why, now)
        raise Conflict(f"The call cannot run: {why}. It was closed as denied.", code=reason_code)


def _win_decision(actor, approval: Approval, approve: bool, reason: str, now) -> None:
    """Record the decision if it is the first; Conflict otherwise."""
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
        if approval.status == ApprovalStatus.PENDING:  # expired between the checks
            raise Conflict("This approval has just expired.", code="approval_expired")
        who = f" by {approval.decided_by_name}" if approval.decided_by_name else ""
        raise Conflict(f"This call was already {approval.status}{who}.", code="already_decided")


def _apply_decision(actor, approval: Approval, approve: bool, reason: str, now) -> Execution:
    """The call follows the decision: queued (and sent to the workers) or rejected."""
    audit_record(
        actor=actor,
        action="approval.approved" if approve else "approval.rejected",
        target=approval,
        after=transitions.approval_snapshot(approval),
    )
    if approve:
        fields = {"to": ExecutionStatus.QUEUED, "queued_at": now}
    else:
        fields = {
            "to": ExecutionStatus.REJECTED,
            "finished_at": now,
            "error_type": "rejected",
            "error_message": f"Rejected by {actor.get_username()}: {reason}",
            **transitions.not_run(),
        }
    moved = transitions.execution_move(
        approval.execution_id,
        from_statuses=[ExecutionStatus.PENDING_APPROVAL],
        actor=actor,
        notify_waiters=False,  # after the commit (approval_decide)
        **fields,
    )
    execution = moved or Execution.objects.get(pk=approval.execution_id)
    if approve and moved is not None:
        tool = execution.tool
        transaction.on_commit(lambda: task_queue.enqueue(execution, tool))
    return execution


def _arguments_changed(approval: Approval) -> str | None:
    """Why the call no longer carries the arguments the approval is bound to, or those
    its admission event recorded (both can be rewritten in the database); None if it does."""
    current = Execution.objects.get(pk=approval.execution_id)
    if current.input_hash != approval.input_hash:
        return "its input_hash is no longer the one the approval is bound to"
    recorded = integrity.admission_record(current.pk)
    if recorded is None:
        return "it has no authentic admission event to check its arguments against"
    changed = integrity.admission_mismatch(current, recorded)
    return f"its {' and '.join(changed)} no longer match what was admitted" if changed else None


def approvals_expire(*, now=None) -> int:
    """Expire undecided approvals past their deadline (periodic task)."""
    now = now or timezone.now()
    return sum(
        _expire(approval, now)
        for approval in Approval.objects.filter(
            status=ApprovalStatus.PENDING, expires_at__lte=now
        ).select_related("execution")
    )


def _expire(approval: Approval, now) -> bool:
    """Expire one undecided approval past its deadline and its call; whether this did."""
    return _end_undecided(
        approval,
        now,
        actor=None,
        approval_fields={"status": ApprovalStatus.EXPIRED},
        execution_fields={
            "to": ExecutionStatus.EXPIRED,
            "error_type": "approval_expired",
            "error_message": "No approver decided before the approval expired.",
        },
    )


def _end_undecided(
    approval: Approval, now, *, actor, approval_fields: dict, execution_fields: dict
) -> bool:
    """Close a pending approval and end its waiting call without running it, audited;
    whether this did (once, whoever gets there)."""
    with transaction.atomic():
        if not transitions.approval_close(approval, actor=actor, now=now, **approval_fields):
            return False
        execution = transitions.execution_move(
            approval.execution_id,
            from_statuses=[ExecutionStatus.PENDING_APPROVAL],
            actor=actor,
            notify_waiters=False,  # after the commit, below
            finished_at=now,
            **transitions.not_run(),
            **execution_fields,
        ) or Execution.objects.get(pk=approval.execution_id)
    notify.notify_done(approval.execution_id)
    _webhook(execution)
    return True


def _no_longer_allowed(execution: Execution, since=None) -> tuple[str, str] | None:
    """Why an approved call may not run now, as ``(reason_code, message)``; None if it may.

    The approver saw the call as it was requested: if the tool was deactivated or
    changed since, or the caller lost the right to execute it, approving it must not
    run something nobody decided on.
    """
    tool = Tool.objects.filter(pk=execution.tool_id).first()
    if tool is None or not tool.is_active:
        return "tool_inactive", "the tool was deactivated after the request"
    if tool.quarantined_at is not None:
        return "tool_definition_changed", "the tool's definition changed after the request"
    if execution.tool_version and tool.version != execution.tool_version:
        return (
            "tool_changed",
            f"the tool changed after the request (version {execution.tool_version} "
            f"is now {tool.version})",
        )
    changed = tool.definition_changed_at or tool.updated_at
    if since is not None and changed > since:
        # What a call does changed (a description or other metadata does not count).
        return (
            "tool_changed",
            "the tool's settings, configs or parameters changed after the request",
        )
    principal = execution.principal
    role_ids = [execution.role_id] if execution.role_id else None
    if principal is None or not principal.is_active:
        return "permission_denied", "the caller no longer exists or is inactive"
    agent = getattr(principal, "agent", None)
    if agent is not None and not agent.is_active:
        return "permission_denied", "the calling agent is no longer active"
    if agent is not None and not agent.owner.is_active:
        return "permission_denied", "the calling agent's owner is deactivated"
    if not authorization.can(principal, Action.EXECUTE, tool, role_ids=role_ids):
        return "permission_denied", "the caller may no longer execute this tool"
    return None


def _close_unrunnable(actor, approval: Approval, reason_code: str, why: str, now) -> None:
    """Close an approval that can no longer lead to a run, and its call (denied)."""
    _end_undecided(
        approval,
        now,
        actor=actor,
        approval_fields={
            "status": ApprovalStatus.CANCELLED,
            "decided_by": actor,
            "decided_by_name": actor.get_username(),
            "reason": f"Not run: {why}."[:2000],
        },
        execution_fields={
            "to": ExecutionStatus.DENIED,
            "reason_code": reason_code,
            "error_type": reason_code,
            "error_message": f"Approved by {actor.get_username()} but not run: {why}.",
        },
    )


def approval_for(user, approval_id) -> Approval:
    try:
        approval_id = uuid.UUID(str(approval_id))
    except ValueError:
        raise NotFound("Approval not found.", code="approval_not_found") from None
    approval = approvals_visible_to(user).filter(pk=approval_id).first()
    if approval is None:
        raise NotFound("Approval not found.", code="approval_not_found")
    return approval


def _webhook(execution: Execution) -> None:
    task_queue.notify_agent(execution)


__all__ = [
    "approval_decide",
    "approval_for",
    "approvals_expire",
    "approvals_visible_to",
    "decision_refusal",
    "may_decide",
]
