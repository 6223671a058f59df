"""The worker side: claim an execution, run its executor, record the outcome.

``execution_run`` is idempotent: it claims the row with a conditional UPDATE
(``queued → running``) and does nothing when the claim fails, so a duplicate
or redelivered task for a running or finished execution is harmless. It runs
only a row that still carries the call its admission event recorded
(``integrity``): one rewritten in the database ends ``denied`` (``integrity_error``).
``executions_reap`` ends executions a dead worker left ``running`` and
re-queues admitted ones whose task was lost before it started.
"""

from __future__ import annotations

import logging
import socket
import time
from datetime import timedelta
from decimal import Decimal
from typing import Any, Protocol

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from executions import telemetry
from executions.executors import get_executor, lent_secrets
from executions.executors.base import ErrorType, ExecutorResult, ToolCall
from executions.jsonsafe import json_safe, storable_text
from executions.models import Approval, Execution, ExecutionStatus
from executions.redaction import redact, redact_text, with_encoded_forms
from executions.services import (
    concurrency,
    guarding,
    integrity,
    notify,
    outputs,
    run_configs,
    transitions,
)
from executions.services.governance import store_result
from executions.services.pinned_calls import (
    DEFINITION_CHANGED,
    pinned_hash,
    quarantine_on_mismatch,
)
from executions.services.run_configs import mcp_configs as _mcp_configs  # noqa: F401
from registry import crypto, snapshot
from registry.models import Agent, Tool
from toolhub import tracing

logger = logging.getLogger(__name__)
User = get_user_model()
WORKER_NAME = socket.gethostname()
REAP_GRACE_SECONDS = 30
REQUEUE_AFTER_SECONDS = 60
STORAGE_ERROR = "storage_error"  # the output could not be kept (the artifact store failed)
SLOT_RETRY_SECONDS = 0.2
SLOT_RETRY_MAX_SECONDS = 2.0
HEARTBEAT_EVERY_SECONDS = 10


RETRY_AFTER_MAX_SECONDS = 30


class Dispatcher(Protocol):
    """What the runner needs of the task queue (``executions.services.dispatch``),
    given once at start-up (``ExecutionsConfig.ready``): the runner is below the
    module that sends tasks, which runs calls here through it."""

    def enqueue(self, execution: Execution, tool: Tool) -> bool: ...

    def requeue(self, execution: Execution, tool: Tool, countdown: float) -> bool: ...

    def notify_agent(self, execution: Execution) -> None: ...


_dispatcher: Dispatcher | None = None


def dispatcher_register(dispatcher: Dispatcher) -> None:
    global _dispatcher
    _dispatcher = dispatcher


def _dispatch() -> Dispatcher:
    if _dispatcher is None:
        raise RuntimeError("no dispatcher registered (executions app not ready)")
    return _dispatcher


def total_budget_seconds(tool: Tool) -> float:
    """How long one call may take at most, retries and backoff included."""
    attempts = tool.max_retries + 1
    return tool.timeout_seconds * attempts + min(30.0, 2.0 * tool.max_retries)


def _backoff(attempt: int, result: ExecutorResult) -> float | None:
    """Seconds to wait before the next attempt, or None when the upstream asks for more
    than a call waits (its Retry-After is honoured by not retrying, never ignored)."""
    default = min(0.2 * (2 ** (attempt - 1)), 5.0)
    retry_after = (result.metadata or {}).get("retry_after")
    if isinstance(retry_after, int | float):
        if retry_after > RETRY_AFTER_MAX_SECONDS:
            return None
        return max(float(retry_after), default)  # a past date or 0: the usual backoff
    return default


def _queue_deadline(execution: Execution, tool: Tool):
    queued = execution.queued_at or execution.created_at
    return queued + timedelta(
        seconds=max(settings.TOOLHUB_QUEUE_WAIT_SECONDS, tool.timeout_seconds)
    )


# Failures that stop a call before anything is sent to the tool.
NEVER_SENT = (ErrorType.CONFIG, ErrorType.INPUT, ErrorType.EGRESS_DENIED, DEFINITION_CHANGED)


def _agent_active(agent_id) -> bool:
    """Whether the agent (its user and its owner) is still active; read once per registry
    generation (deactivating an agent or a person moves the generation)."""

    def load() -> bool:
        return Agent.objects.filter(
            pk=agent_id, is_active=True, user__is_active=True, owner__is_active=True
        ).exists()

    return snapshot.cached(snapshot.current(), ("agent_active", agent_id), load)


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
    if not tool.is_active:  # deactivated after the call was admitted: the kill switch holds
        return _deny_queued(row, "tool_inactive", "The tool was deactivated before the call ran.")
    if tool.quarantined_at is not None:  # its definition changed after the call was admitted
        return _deny_queued(
            row, DEFINITION_CHANGED, "The tool was quarantined before the call ran."
        )
    if row.agent_id and not _agent_active(row.agent_id):  # so is the agent's
        return _deny_queued(
            row, "agent_inactive", "The agent (or its owner) was deactivated before the call ran."
        )
    # What runs is this row as read: it must still be the call that was admitted.
    tampered = integrity.claim_refusal(row)
    if tampered is not None:
        logger.error("execution %s refused: %s", execution_id, tampered)
        return _deny_queued(row, integrity.INTEGRITY_ERROR, tampered)
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


def take_slots(execution: Execution, tool: Tool) -> list[str] | None:
    """The concurrency slots a call about to run here needs (None: one is full)."""
    return concurrency.acquire_slots(
        execution, tool, lease=total_budget_seconds(tool) + REAP_GRACE_SECONDS
    )


def release_slots(execution: Execution, slots: list[str]) -> None:
    for key in slots:
        concurrency.release(key, str(execution.pk))


def mark_running(execution: Execution, tool: Tool, now) -> None:
    """Set an execution's claim fields: this process runs it from ``now``."""
    execution.status = ExecutionStatus.RUNNING
    execution.started_at = now
    execution.deadline_at = now + timedelta(seconds=total_budget_seconds(tool) + REAP_GRACE_SECONDS)
    execution.worker = WORKER_NAME[:200]


def run_claimed(execution: Execution, spec, *, notify_waiters: bool = True) -> Execution:
    """Run an execution this process holds as ``running`` and record its outcome.

    ``notify_waiters=False`` when the only waiter is the caller running it here.
    """
    started = time.monotonic()
    decisions: list[dict] = []
    with tracing.span("toolhub.run", telemetry.execution_attributes(execution)) as current:
        try:
            result, attempts, elapsed_ms = _run_with_retries(execution, spec)
            result, decisions = guarding.guarded_result(execution, spec, result)
        except Exception:  # a bug of ours after the tool may have run: end the call, do not retry
            logger.exception("execution %s: failed while running", execution.pk)
            result, attempts = _internal_failure(), 1
            elapsed_ms = (time.monotonic() - started) * 1000
        quarantine_on_mismatch(spec.tool, result)
        finished = _finish(
            execution,
            spec.tool,
            result,
            attempts,
            elapsed_ms,
            notify_waiters,
            guards=spec.guards,
            decisions=decisions,
        )
        current.set_attributes(telemetry.outcome_attributes(finished))
        if finished.status == ExecutionStatus.FAILED:
            tracing.failed(current, finished.error_type or "failed")
    return finished


def _internal_failure() -> ExecutorResult:
    # No exception text: it may quote a secret or an argument.
    return ExecutorResult(
        ok=False,
        error_type=ErrorType.INTERNAL,
        error_message=(
            "ToolHub failed while running this call; it may have reached the tool, so it "
            "was not run again."
        ),
    )


def fail_internal(execution: Execution, tool: Tool) -> Execution:
    """End a call this process holds as ``running`` after an unexpected failure of ours
    (if nothing ended it meanwhile), and return the row as it now is."""
    return _finish(execution, tool, _internal_failure(), max(execution.attempts, 1), 0.0)


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
    if _dispatch().requeue(execution, tool, pause):
        return None
    # In-process (embedded): nobody else will pick it up, so wait here.
    time.sleep(pause)
    return execution_run(execution_id=execution.pk)


def _run_with_retries(execution: Execution, spec) -> tuple[ExecutorResult, int, float]:
    tool = spec.tool
    started = time.monotonic()
    try:
        sealed = crypto.decrypt_json(execution.sealed_secrets) if execution.sealed_secrets else {}
        configs, secret_configs = spec.runtime(run_configs.configs_for)
        # Every secret the call uses, whatever the executor: the tool's, the caller's
        # and those its configs resolve to (an MCP server's token, a database alias).
        lent = lent_secrets(tool.type, configs)
        secrets = tuple(dict.fromkeys([*run_configs.secret_values(secret_configs, sealed), *lent]))
        executor = get_executor(tool.type)
    except Exception as exc:  # configuration that cannot even be loaded
        logger.warning("execution %s: cannot prepare: %s", execution.pk, exc.__class__.__name__)
        return (
            ExecutorResult(ok=False, error_type=ErrorType.CONFIG, error_message=str(exc)[:500]),
            0,
            0.0,
        )
    inputs = {**(execution.input_data or {}), **sealed}
    deadline = started + total_budget_seconds(tool)
    attempt = 0
    while True:
        attempt += 1  # recorded with the outcome: one write per run, not one per attempt
        call = ToolCall(
            tool_name=tool.name,
            tool_type=tool.type,
            configs=configs,
            inputs=inputs,
            timeout_seconds=float(tool.timeout_seconds),
            # The executor may read up to the artifact cap; the row keeps at most
            # tool.max_response_bytes and the rest goes to the artifact.
            max_response_bytes=max(tool.max_response_bytes, settings.TOOLHUB_MAX_ARTIFACT_BYTES),
            execution_id=str(execution.pk),
            attempt=attempt,
            secret_values=secrets,
            pinned_definition_hash=pinned_hash(tool),
        )
        result = _execute(executor, call, secrets)
        if result.ok or not result.retryable or attempt > tool.max_retries:
            break
        pause = _backoff(attempt, result)
        if pause is None or time.monotonic() + pause + tool.timeout_seconds > deadline:
            retry_after = (result.metadata or {}).get("retry_after")
            if isinstance(retry_after, int | float) and result.error_message:
                result.error_message += f" (the upstream asks to retry after {retry_after:g} s)"
            break
        time.sleep(pause)
    forms = with_encoded_forms(secrets)
    result.output = redact(json_safe(result.output), forms)
    if result.error_message:
        result.error_message = redact_text(result.error_message, forms)
    return result, attempt, (time.monotonic() - started) * 1000


def _execute(executor, call: ToolCall, secrets: tuple[str, ...]) -> ExecutorResult:
    """One attempt: the executor's result (an executor that raises has failed the call)."""
    with tracing.span("toolhub.executor", telemetry.call_attributes(call)) as current:
        try:
            result = executor.execute(call)
        except Exception as exc:  # an executor bug must still end the execution
            logger.exception("execution %s: executor crashed", call.execution_id)
            result = ExecutorResult(
                ok=False,
                error_type=ErrorType.TOOL,
                error_message=redact_text(f"{exc.__class__.__name__}: {exc}", secrets)[:2000],
            )
        current.set_attributes(telemetry.result_attributes(result))
        if not result.ok:
            tracing.failed(current, result.error_type or "failed")
        return result


def _finish(
    execution: Execution,
    tool: Tool,
    result: ExecutorResult,
    attempts: int,
    elapsed_ms: float,
    notify_waiters: bool = True,
    *,
    guards=(),
    decisions: list[dict] | None = None,
):
    fields: dict[str, Any] = {}
    if decisions:
        fields["guard_decisions"] = [*(execution.guard_decisions or []), *decisions]
    if result.output is not None:
        try:
            cut = bool((result.metadata or {}).get("truncated"))
            fields.update(outputs.store_output(execution, tool, result.output, cut=cut))
        except outputs.ArtifactNotStored as exc:
            # The row keeps the preview; the call ends failed now, not at the reaper.
            fields.update(exc.fields)
            result = ExecutorResult(
                ok=False,
                output=result.output,
                error_type=STORAGE_ERROR,
                error_message=(
                    f"The output ({exc.fields['output_size']} bytes) is larger than the tool's "
                    "max_response_bytes and could not be stored as an artifact; the row keeps "
                    "a preview."
                ),
                upstream_status=result.upstream_status,
                metadata=result.metadata,
            )
    status = ExecutionStatus.SUCCEEDED if result.ok else ExecutionStatus.FAILED
    if not result.ok and result.error_type in NEVER_SENT and execution.cost:
        fields["cost"] = Decimal(0)  # stopped before it reached the tool: nothing to charge
    if result.metadata.get("truncated"):
        fields["output_truncated"] = True
    fields.update(
        status=status,
        error_type=(result.error_type or "")[:40] if not result.ok else "",
        error_message=storable_text(result.error_message or "")[:10000] if not result.ok else "",
        upstream_status=result.upstream_status,
        attempts=attempts,
        finished_at=timezone.now(),
        execution_time_ms=round(elapsed_ms, 3),
        sealed_secrets="",
    )
    # The row as it is about to be written: the audit event describes it, and
    # after the write nothing is read back.
    for name, value in fields.items():
        setattr(execution, name, value)
    done = transitions.execution_finish(execution, fields, actor=_principal(execution))
    if done:
        store_result(tool, execution, guards)
        if (
            guarding.may_have_waited(tool, execution)
            and Approval.objects.filter(execution=execution).exists()
        ):
            _dispatch().notify_agent(execution)
    else:
        execution.refresh_from_db()
    if notify_waiters:
        notify.notify_done(execution.pk)
    return execution


def _principal(execution: Execution):
    """The caller, for the audit event: the loaded user when there is one, else by id (kept)."""
    cached = execution._state.fields_cache.get("principal")
    if cached is not None or execution.principal_id is None:
        return cached
    return snapshot.cached(
        snapshot.current(),
        ("user", execution.principal_id),
        lambda: User.objects.filter(pk=execution.principal_id).first(),
    )


def executions_reap(*, now=None) -> dict[str, int]:
    """End executions whose worker died, and re-queue admitted ones whose task was lost."""
    now = now or timezone.now()
    failed = 0
    for execution in Execution.objects.filter(
        status=ExecutionStatus.RUNNING, deadline_at__lt=now
    ).only("pk"):
        ended = transitions.execution_move(
            execution.pk,
            from_statuses=[ExecutionStatus.RUNNING],
            to=ExecutionStatus.FAILED,
            where={"deadline_at__lt": now},
            error_type="worker_lost",
            error_message="The worker running this execution stopped before it finished.",
            finished_at=now,
            sealed_secrets="",  # not charged back: the tool may have run
        )
        if ended is None:
            notify.notify_done(execution.pk)
        failed += ended is not None
    requeued = 0
    stale = now - timedelta(seconds=REQUEUE_AFTER_SECONDS)
    for execution in (
        Execution.objects.filter(status=ExecutionStatus.QUEUED, queued_at__lt=stale)
        .filter(Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale))
        .select_related("tool")
    ):
        if not _dispatch().enqueue(execution, execution.tool):
            break  # the broker does not answer: the next round tries again
        Execution.objects.filter(pk=execution.pk, status=ExecutionStatus.QUEUED).update(
            queued_at=now
        )
        requeued += 1
    if failed or requeued:
        logger.warning(
            "reaper: %d execution(s) failed as worker_lost, %d re-queued", failed, requeued
        )
    return {"failed": failed, "requeued": requeued}
