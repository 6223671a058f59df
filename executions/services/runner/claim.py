"""A queued execution claimed to ``running`` (or refused, or left to wait for a slot):
the one claim, for the workers and for a call run where it was admitted."""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from executions.models import Execution, ExecutionStatus
from executions.services import integrity, notify, task_queue, transitions
from executions.services.pinned_calls import DEFINITION_CHANGED
from executions.services.runner.run import run_claimed
from executions.services.runner.slots import claim_fields, release_slots, take_slots
from registry import snapshot
from registry.models import Agent, Tool
from toolhub import log_secrets

logger = logging.getLogger(__name__)
SLOT_RETRY_SECONDS = 0.2
SLOT_RETRY_MAX_SECONDS = 2.0
HEARTBEAT_EVERY_SECONDS = 10


class ClaimOutcome(enum.Enum):
    """What claiming a queued call came to."""

    RUNS = "runs"  # this process holds it as ``running``, and its concurrency slots
    REFUSED = "refused"  # it may no longer run (``Claim.reason``, ``Claim.message``)
    BUSY = "busy"  # a concurrency slot is full: it stays queued
    GONE = "gone"  # no longer queued: another claimer won, or it ended meanwhile


@dataclass(frozen=True)
class Claim:
    """A claim's outcome, and for a refusal its reason code and message (the record's)."""

    outcome: ClaimOutcome
    reason: str = ""
    message: str = ""

    @property
    def runs(self) -> bool:
        return self.outcome is ClaimOutcome.RUNS


@contextmanager
def claimed(
    execution: Execution, tool: Tool, *, now=None, entries=snapshot.UNREAD
) -> Iterator[Claim]:
    """Claim a queued call to run in this process for the length of the block.

    The one claim, for a worker's task and for a call the web process runs as it
    admits it (decision 0004, ``execution`` not written yet): whether it may still
    run (``claim_refusal``), its concurrency slots, then ``queued → running``
    (``transitions.execution_claim``: of two claimers one wins). The slots it took
    are released when the block ends, however it ends, and nowhere else. While the
    call runs, what this thread logs loses the call's secrets (``toolhub.log_secrets``).
    ``entries``: the registry entries read for this call already (its admission's).
    """
    refusal = claim_refusal(execution, tool, snapshot.resolve(entries))
    if refusal is not None:
        yield Claim(ClaimOutcome.REFUSED, *refusal)
        return
    slots = take_slots(execution, tool)
    if slots is None:
        yield Claim(ClaimOutcome.BUSY)
        return
    try:
        fields = claim_fields(execution, tool, now or timezone.now())
        won = transitions.execution_claim(execution, fields)
        # What is logged while the call runs loses its secrets (the runner adds them).
        with log_secrets.scope():
            yield Claim(ClaimOutcome.RUNS if won else ClaimOutcome.GONE)
    finally:
        release_slots(slots)


def execution_run(*, execution_id) -> Execution | None:
    """Run one queued execution to a terminal status. Safe to call more than once.

    When the tool (or its MCP server) is at its concurrency limit, the call
    stays ``queued`` and the task comes back a moment later, until the
    queue deadline; then it fails with ``queue_timeout``.
    """
    row = Execution.objects.filter(pk=execution_id).first()
    if row is None or row.tool_id is None or row.status != ExecutionStatus.QUEUED:
        return None
    spec = snapshot.tool_spec(row.tool_id)
    if spec is None:
        return None
    tool = row.tool = spec.tool
    with claimed(row, tool) as claim:
        if claim.runs:
            return run_claimed(row, spec)
    if claim.outcome is ClaimOutcome.REFUSED:
        return _deny_queued(row, claim.reason, claim.message)
    if claim.outcome is ClaimOutcome.BUSY:
        return _wait_for_slot(row, tool)
    logger.info("execution %s no longer queued: nothing to do", execution_id)
    return None


def claim_refusal(execution: Execution, tool: Tool, entries) -> tuple[str, str] | None:
    """Why a queued call may no longer run (reason code and message), or None."""
    if not tool.is_active:  # deactivated after the call was admitted: the kill switch holds
        return "tool_inactive", "The tool was deactivated before the call ran."
    if tool.quarantined_at is not None:  # its definition changed after the call was admitted
        return DEFINITION_CHANGED, "The tool was quarantined before the call ran."
    if execution.agent_id and not _agent_active(execution.agent_id, entries):  # the agent's
        return "agent_inactive", "The agent (or its owner) was deactivated before the call ran."
    if execution._state.adding:
        # Being admitted by this process: its admission event is written from this
        # very row, with it; there is nothing in the database to have been altered.
        return None
    # What runs is this row as read: it must still be the call that was admitted.
    tampered = integrity.claim_refusal(execution)
    if tampered is not None:
        logger.error("execution %s refused: %s", execution.pk, tampered)
        return integrity.INTEGRITY_ERROR, tampered
    return None


def _agent_active(agent_id, entries) -> bool:
    """Whether the agent (its user and its owner) is still active; read once per registry
    generation (deactivating an agent or a person moves the generation)."""

    def load() -> bool:
        return Agent.objects.filter(
            pk=agent_id, is_active=True, user__is_active=True, owner__is_active=True
        ).exists()

    return snapshot.cached(entries, ("agent_active", agent_id), load)


def _deny_queued(execution: Execution, reason: str, message: str) -> Execution | None:
    """End a queued call that may no longer run as ``denied`` (once, whoever gets there)."""
    transitions.execution_move(
        execution.pk,
        from_statuses=[ExecutionStatus.QUEUED],
        to=ExecutionStatus.DENIED,
        reason_code=reason,
        error_type=reason,
        error_message=message,
        finished_at=timezone.now(),
        **transitions.not_run(),
    )
    return None


def _queue_deadline(execution: Execution, tool: Tool):
    queued = execution.queued_at or execution.created_at
    return queued + timedelta(
        seconds=max(settings.TOOLHUB_QUEUE_WAIT_SECONDS, tool.timeout_seconds)
    )


def _wait_for_slot(execution: Execution, tool: Tool) -> Execution | None:
    now = timezone.now()
    if now >= _queue_deadline(execution, tool):
        if not transitions.execution_move(
            execution.pk,
            from_statuses=[ExecutionStatus.QUEUED],
            to=ExecutionStatus.FAILED,
            error_type="queue_timeout",
            error_message="The tool stayed at its concurrency limit until this call's queue deadline.",
            finished_at=now,
            **transitions.not_run(),
        ):
            notify.notify_done(execution.pk)
        return None
    beat = execution.heartbeat_at
    if beat is None or (now - beat).total_seconds() >= HEARTBEAT_EVERY_SECONDS:
        # The reaper re-queues a queued call whose heartbeat is older than a minute: a
        # beat every few seconds is enough (one per retry was a write every 0.2 s).
        Execution.objects.filter(pk=execution.pk, status=ExecutionStatus.QUEUED).update(
            heartbeat_at=now
        )
    # Try again soon at first, then less often: 0.2 s, growing with the wait to 2 s.
    waited = (now - (execution.queued_at or execution.created_at)).total_seconds()
    pause = min(SLOT_RETRY_MAX_SECONDS, max(SLOT_RETRY_SECONDS, waited / 10))
    if task_queue.requeue(execution, tool, pause):
        return None
    # In-process (embedded): nobody else will pick it up, so wait here.
    time.sleep(pause)
    return execution_run(execution_id=execution.pk)
