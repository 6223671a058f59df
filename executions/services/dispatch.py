"""Where an admitted call runs: here, on a worker while the caller waits, or on a worker.

The call is sent to the workers through ``task_queue`` (the only module that sends
tasks); when the broker does not take it, it ends ``failed`` here.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from executions import telemetry
from executions.models import Execution, ExecutionStatus
from executions.services import notify, runner, transitions
from executions.services.budget import total_budget_seconds
from executions.services.task_queue import enqueue, tasks_run_here
from registry.models import Tool
from toolhub import tracing
from toolhub.db import pool
from toolhub.exceptions import ToolHubError

logger = logging.getLogger(__name__)
QUEUE_UNAVAILABLE_MESSAGE = (
    "The task queue (broker) could not take the call; it was not run. Retry later."
)


class QueueUnavailable(ToolHubError):
    """The broker did not take an admitted call: it was ended ``failed``, nothing ran."""

    status_code = 503
    code = "queue_unavailable"


def runs_inline(tool: Tool, wait: float | bool | None) -> bool:
    """Run here when the caller waits for the whole call: ``true``, or a number of
    seconds covering the tool's full budget (a shorter wait must answer 202 in time)."""
    if not wait or tool.type not in settings.TOOLHUB_INLINE_WAIT:
        return False
    return wait is True or float(wait) >= total_budget_seconds(tool)


@contextmanager
def claimed_here(execution: Execution, tool: Tool, wait, now, entries) -> Iterator[bool]:
    """Whether a just-admitted call runs here, claimed (``runner.claimed``) from ``now``
    for the length of the block; otherwise the workers run it.

    A caller that waits has its call run in this process, skipping the broker hop
    (bench/README.md): the same claim as a worker's, the same slots, retries and
    recording. Claimed before its row is written, it is admitted and started in one
    write: durable as ``running`` before the tool runs, ended by the reaper if this
    process dies. A call the claim refuses, or whose slot is full, stays ``queued``
    for the workers, whose claim decides it the same way. ``entries``: the registry
    entries its admission read.
    """
    if execution.status != ExecutionStatus.QUEUED or not runs_inline(tool, wait):
        yield False
        return
    with runner.claimed(execution, tool, now=now, entries=entries) as claim:
        yield claim.runs


def wait_limit(tool: Tool, wait: float | bool) -> float:
    budget = total_budget_seconds(tool) + 2.0
    if wait is True:
        return budget
    return max(0.0, min(float(wait), budget))


class Dispatched(enum.Enum):
    """What became of an admitted call sent to the workers."""

    QUEUED = "queued"  # the workers have it (or it left ``queued`` meanwhile: claimed)
    NOT_QUEUED = "not_queued"  # the broker did not take it: it ended ``failed``, unrun
    AT_COMMIT = "at_commit"  # sent when the open transaction commits


def dispatch_on_commit(execution: Execution, tool: Tool, publish=enqueue) -> Dispatched:
    """``dispatch_admitted`` once the call's row is committed: now when no transaction
    is open, otherwise when the open one commits (what becomes of it is not known here)."""
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: dispatch_admitted(execution, tool, publish))
        return Dispatched.AT_COMMIT
    return dispatch_admitted(execution, tool, publish)


def dispatch_admitted(execution: Execution, tool: Tool, publish=enqueue) -> Dispatched:
    """Send a just-admitted call to the workers (its row committed); what became of it.

    When the broker does not take it, the call ends ``failed`` with error type
    ``queue_unavailable`` (the caller is answered 503): it never runs, not even
    from a message that reached the broker after all, because a worker runs only
    ``queued`` calls. If a worker claimed it first, it stays the worker's.
    """
    attributes = {**telemetry.execution_attributes(execution), "toolhub.queue": tool.type}
    with tracing.span("toolhub.dispatch", attributes) as current:
        published = publish(execution, tool)
        if not published:
            tracing.failed(current, QueueUnavailable.code)
    if published:
        return Dispatched.QUEUED
    ended = transitions.execution_move(
        execution.pk,
        from_statuses=[ExecutionStatus.QUEUED],
        to=ExecutionStatus.FAILED,
        notify_waiters=False,  # the caller is answered 503 at once
        error_type=QueueUnavailable.code,
        error_message=QUEUE_UNAVAILABLE_MESSAGE,
        finished_at=timezone.now(),
        **transitions.not_run(),
    )
    return Dispatched.QUEUED if ended is None else Dispatched.NOT_QUEUED


def queue_refusal(execution: Execution) -> QueueUnavailable:
    return QueueUnavailable(QUEUE_UNAVAILABLE_MESSAGE, extra={"execution_id": str(execution.pk)})


def run_or_wait(execution: Execution, spec, *, wait, run_here: bool) -> Execution:
    """An admitted call's answer: run here, wait for the worker, or answer at once.

    A failure of ours from here on never leaves the call ``running`` nor answers
    a 500: the call may have reached the tool, so it ends ``failed`` (run here)
    or is answered as it stands (a worker still has it); never run again. When not
    even that can be written (no database connection), the answer is a 503 naming
    the execution, and the reaper ends it ``failed`` once its deadline passes.
    """
    try:
        return _run_or_wait(execution, spec, wait=wait, run_here=run_here)
    except pool.UNAVAILABLE_ERRORS as exc:
        refused = pool.unavailable_from(exc)
        refused.message = ADMITTED_UNRECORDED_MESSAGE.format(id=execution.pk)
        refused.extra = {"execution_id": str(execution.pk)}
        raise refused from None


ADMITTED_UNRECORDED_MESSAGE = (
    "The call was admitted as execution {id}, but the database could not be reached to "
    "record or read its outcome. Do not call again blindly: GET /api/v1/executions/{id} "
    "says how it ended (a run whose end could not be written ends failed once its "
    "deadline passes)."
)


def _run_or_wait(execution: Execution, spec, *, wait, run_here: bool) -> Execution:
    if run_here:  # claimed here (``claimed_here``): its slots are released with the claim
        try:
            return runner.run_claimed(execution, spec, notify_waiters=False)
        except Exception:
            logger.exception("execution %s: failed after it was admitted", execution.pk)
            return runner.fail_internal(execution, spec.tool)
    queued = execution.status == ExecutionStatus.QUEUED
    # A call waiting for a human answers at once, even when the caller asked to wait.
    if wait and queued:
        _wait_for(execution, wait_limit(spec.tool, wait))
    if (wait or tasks_run_here()) and queued:
        # Embedded mode runs the task in this thread when the row commits: the
        # call has finished by now, so answer with what it became, not "queued".
        execution.refresh_from_db()
    return execution


def _wait_for(execution: Execution, limit: float) -> None:
    def done() -> bool:
        return (
            Execution.objects.filter(pk=execution.pk)
            .exclude(status__in=[ExecutionStatus.QUEUED, ExecutionStatus.RUNNING])
            .exists()
        )

    try:
        notify.wait_done(execution.pk, limit, done)
    except Exception:
        logger.exception("execution %s: waiting for it failed; answered as it stands", execution.pk)
