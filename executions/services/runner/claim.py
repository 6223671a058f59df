"""A queued execution claimed to ``running`` (or refused, or left to wait for a slot)."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from executions.models import Execution, ExecutionStatus
from executions.services import integrity, notify, task_queue, transitions
from executions.services.pinned_calls import DEFINITION_CHANGED
from executions.services.runner.run import run_claimed
from executions.services.runner.slots import mark_running, release_slots, take_slots
from registry import snapshot
from registry.models import Agent, Tool

logger = logging.getLogger(__name__)
SLOT_RETRY_SECONDS = 0.2
SLOT_RETRY_MAX_SECONDS = 2.0
HEARTBEAT_EVERY_SECONDS = 10


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
    refusal = _refusal(row, tool)
    if refusal is not None:
        return _deny_queued(row, *refusal)
    slots = take_slots(row, tool)
    if slots is None:
        return _wait_for_slot(row, tool)
    try:
        mark_running(row, tool, timezone.now())  # the row as claimed: not read back
        claimed = transitions.execution_claim(
            row,
            {
                "started_at": row.started_at,
                "deadline_at": row.deadline_at,
                "worker": row.worker,
                # As read: a beat another task wrote meanwhile would differ from the row
                # the finish event hashes (content version 3).
                "heartbeat_at": row.heartbeat_at,
            },
        )
        if not claimed:
            logger.info("execution %s no longer queued: nothing to do", execution_id)
            return None
        return run_claimed(row, spec)
    finally:
        release_slots(row, slots)


def _refusal(row: Execution, tool: Tool) -> tuple[str, str] | None:
    """Why a queued call may no longer run (reason code and message), or None."""
    if not tool.is_active:  # deactivated after the call was admitted: the kill switch holds
        return "tool_inactive", "The tool was deactivated before the call ran."
    if tool.quarantined_at is not None:  # its definition changed after the call was admitted
        return DEFINITION_CHANGED, "The tool was quarantined before the call ran."
    if row.agent_id and not _agent_active(row.agent_id):  # so is the agent's
        return "agent_inactive", "The agent (or its owner) was deactivated before the call ran."
    # What runs is this row as read: it must still be the call that was admitted.
    tampered = integrity.claim_refusal(row)
    if tampered is not None:
        logger.error("execution %s refused: %s", row.pk, tampered)
        return integrity.INTEGRITY_ERROR, tampered
    return None


def _agent_active(agent_id) -> bool:
    """Whether the agent (its user and its owner) is still active; read once per registry
    generation (deactivating an agent or a person moves the generation)."""

    def load() -> bool:
        return Agent.objects.filter(
            pk=agent_id, is_active=True, user__is_active=True, owner__is_active=True
        ).exists()

    return snapshot.cached(snapshot.current(), ("agent_active", agent_id), load)


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
