"""The one way a tool runs: ``execution_request``.

The REST API, the admin's test run and (later) the MCP endpoint all call it (or
``execution_submit``, which also answers the rate-limit quota). Admission
decides (``admission``: caller, tool, active, right, arguments, rate limits,
approval gate, cache); a refusal, raised by the step that decides it, is
recorded on its way out (status ``denied`` or ``invalid`` with a reason code,
audited, ``recording``) and leaves as the domain error the API maps to HTTP; an
admitted call is written, then run here, waited for or answered at once
(``dispatch``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from executions import telemetry
from executions.models import Execution, ExecutionStatus
from executions.services import cancellation, dispatch, governance, notify, transitions
from executions.services.admission import (
    Admission,
    AmbiguousToolName,
    Caller,
    InvalidArguments,
    Refusal,
    Refused,
    admission_decide,
    resolve_caller,
)
from executions.services.dispatch import QueueUnavailable
from executions.services.recording import admitted_record, admitted_write, refusal_write
from executions.services.refusal_secrets import (
    problems_without_secrets,
    secret_forms,
    without_secret_values,
    without_secrets,
)
from executions.services.task_queue import enqueue
from registry import authorization, snapshot
from toolhub import tracing
from toolhub.exceptions import Conflict, PermissionDenied

__all__ = [  # the names callers import from here, wherever they live now
    "AmbiguousToolName",
    "Caller",
    "InvalidArguments",
    "QueueUnavailable",
    "Submitted",
    "enqueue",
    "execution_cancel",
    "execution_request",
    "execution_submit",
    "problems_without_secrets",
    "resolve_caller",
    "secret_forms",
    "without_secret_values",
    "without_secrets",
]


@dataclass(frozen=True)
class Submitted:
    """An admitted call as it stands when answered, and the rate-limit quota it left."""

    execution: Execution
    quota: governance.Quota | None


def execution_request(
    *,
    user,
    tool_ref: str,
    arguments: Any,
    wait: float | bool | None = None,
    role_ref: Any = None,
    registry: dict | object | None = snapshot.UNREAD,
    on_admitted: Callable[[Execution], None] | None = None,
) -> Execution:
    """Decide on one call and, if admitted, run it (``execution_submit``, its execution)."""
    return execution_submit(
        user=user,
        tool_ref=tool_ref,
        arguments=arguments,
        wait=wait,
        role_ref=role_ref,
        registry=registry,
        on_admitted=on_admitted,
    ).execution


def execution_submit(
    *,
    user,
    tool_ref: str,
    arguments: Any,
    wait: float | bool | None = None,
    role_ref: Any = None,
    registry: dict | object | None = snapshot.UNREAD,
    on_admitted: Callable[[Execution], None] | None = None,
    toolset: str | None = None,
) -> Submitted:
    """Decide on one call and, if admitted, record it and run or queue it.

    ``toolset``: the slug of the toolset the call came through; a tool outside it is a
    recorded refusal (``tool_not_in_toolset``).

    ``registry``: the in-memory registry entries the caller's authentication
    already validated in this request (saves reading the generation again).
    ``on_admitted``: called with the execution once its row is written, before
    the tool can run (an ``Idempotency-Key`` is bound to it there).
    """
    entries = snapshot.resolve(registry)
    with ExitStack() as held:  # a call claimed to run here, until its answer
        with _admission_span(tool_ref) as current:
            admission = admission_decide(
                user=user,
                tool_ref=tool_ref,
                arguments=arguments,
                role_ref=role_ref,
                entries=entries,
                toolset=toolset,
            )
            execution, runs_here = _admitted(admission, tool_ref, entries, wait, on_admitted, held)
            current.set_attributes(telemetry.execution_attributes(execution))
        tool = admission.tool
        if execution.status == ExecutionStatus.QUEUED:
            # Sent once its row is committed, so nothing runs it before ``on_admitted``
            # knows it; by ``enqueue`` as this module names it (a benchmark may stand in).
            sent = dispatch.dispatch_on_commit(execution, tool, publish=enqueue)
            if sent is dispatch.Dispatched.NOT_QUEUED:
                raise dispatch.queue_refusal(execution)
        execution = dispatch.run_or_wait(execution, admission.spec, wait=wait, run_here=runs_here)
    return Submitted(execution, admission.quota)


@contextmanager
def _admission_span(tool_ref: Any) -> Iterator[Any]:
    """The admission's span. A refusal raised in it (``Refused``, by the step of
    admission that decides it) is recorded on its way out, its row and audit event
    and the span's attributes, and leaves as the error the caller is answered with,
    naming that record: after the span, which a refusal does not fail (it is the
    caller's error, not ours)."""
    answer = None
    with tracing.span("toolhub.admission") as current:
        try:
            yield current
        except Refused as refused:
            refusal = refused.refusal
            record = refusal_write(refusal, tool_ref=tool_ref)
            current.set_attributes(_refusal_attributes(refusal, record))
            answer = refusal.error.with_extra(execution_id=str(record.pk))
    if answer is not None:
        raise answer from None  # where it was decided stays out of the answer


def _admitted(
    admission: Admission, tool_ref: str, entries, wait, on_admitted, held: ExitStack
) -> tuple[Execution, bool]:
    """Write an admitted call's record; whether it runs here, claimed for as long as
    ``held`` is open (its concurrency slots are released when it closes)."""
    now = timezone.now()
    execution = admitted_record(admission, tool_ref, entries, now)
    # A caller that waits may have its call run here, claimed in the same write.
    runs_here = held.enter_context(
        dispatch.claimed_here(execution, admission.tool, wait, now, entries)
    )
    admitted_write(
        execution,
        admission.tool,
        admission.digest,
        now,
        on_admitted,
        approval_reason=admission.approval_reason,
    )
    return execution, runs_here


def _refusal_attributes(refusal: Refusal, record: Execution) -> dict:
    return {
        telemetry.EXECUTION_ID: str(record.pk),
        "toolhub.tool.name": refusal.tool.name if refusal.tool is not None else None,
        telemetry.STATUS: refusal.status,
        "toolhub.execution.reason_code": refusal.code,
    }


def execution_cancel(*, actor, execution: Execution) -> Execution:
    """Cancel a call that has not finished: queued, waiting for approval, or running.

    A running call is recorded as cancelled at once (by ``actor``) and the process
    running it is told to stop the work (``cancellation``); what it returns after is
    not recorded. Only the caller, the agent's owner and platform admins may cancel;
    a reviewer sees every call but changes none.
    """
    allowed = (
        execution.principal_id == actor.pk
        or (execution.agent_id is not None and execution.agent.owner_id == actor.pk)
        or authorization.is_platform_admin(actor)
    )
    if not allowed:
        raise PermissionDenied("Only the caller, the agent's owner or a platform admin may cancel.")
    with transaction.atomic():  # the call, its approval and their events together
        ended = {
            "actor": actor,
            "notify_waiters": False,
            "to": ExecutionStatus.CANCELLED,
            "finished_at": timezone.now(),
            "error_type": "cancelled",
            "error_message": f"Cancelled by {actor.get_username()}."[:10000],
        }
        cancelled = transitions.execution_move(
            execution.pk,
            from_statuses=[ExecutionStatus.QUEUED, ExecutionStatus.PENDING_APPROVAL],
            **ended,
            **transitions.not_run(),
        )
        if cancelled is None:  # it runs: what it was sent to is charged, its secrets dropped
            cancelled = transitions.execution_move(
                execution.pk, from_statuses=[ExecutionStatus.RUNNING], sealed_secrets="", **ended
            )
            if cancelled is not None:
                transaction.on_commit(lambda: cancellation.cancel_signal(cancelled.pk))
        if cancelled is None:
            execution.refresh_from_db()
            raise Conflict(
                f"Execution is {execution.status}; only a call that has not finished can be "
                "cancelled.",
                code="not_cancellable",
            )
        # Its approval is closed too: nobody may approve a call that was cancelled.
        transitions.approvals_close_for(cancelled, actor=actor)
    notify.notify_done(execution.pk)
    return cancelled
