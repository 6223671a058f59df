"""One claimed call, from the executor to its recorded outcome."""

from __future__ import annotations

import logging
import time

from executions import telemetry
from executions.models import Execution, ExecutionStatus
from executions.services import guarding
from executions.services.pinned_calls import quarantine_on_mismatch
from executions.services.runner.attempts import run_with_retries
from executions.services.runner.finish import finish, internal_failure
from toolhub import tracing

logger = logging.getLogger(__name__)


def run_claimed(execution: Execution, spec, *, notify_waiters: bool = True) -> Execution:
    """Run an execution this process holds as ``running`` and record its outcome.

    ``notify_waiters=False`` when the only waiter is the caller running it here.
    """
    started = time.monotonic()
    decisions: list[dict] = []
    with tracing.span("toolhub.run", telemetry.execution_attributes(execution)) as current:
        try:
            result, attempts, elapsed_ms = run_with_retries(execution, spec)
            result, decisions = guarding.guarded_result(execution, spec, result)
        except Exception:  # a bug of ours after the tool may have run: end the call, do not retry
            logger.exception("execution %s: failed while running", execution.pk)
            result, attempts = internal_failure(), 1
            elapsed_ms = (time.monotonic() - started) * 1000
        quarantine_on_mismatch(spec.tool, result)
        finished = finish(
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
