"""A call's outcome written once: output stored (or its artifact), status, audit, waiters told."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from executions.executors.base import ErrorType, ExecutorResult
from executions.jsonsafe import storable_text
from executions.models import Approval, Execution, ExecutionStatus
from executions.services import (
    guarding,
    notify,
    outputs,
    task_queue,
    transitions,
    upstream_accounts,
)
from executions.services.governance import store_result
from executions.services.pinned_calls import DEFINITION_CHANGED
from registry import snapshot
from registry.models import Tool

User = get_user_model()
STORAGE_ERROR = "storage_error"  # the output could not be kept (the artifact store failed)

# Failures that stop a call before anything is sent to the tool.
NEVER_SENT = (
    ErrorType.CONFIG,
    ErrorType.INPUT,
    ErrorType.EGRESS_DENIED,
    DEFINITION_CHANGED,
    *upstream_accounts.RUN_ERRORS,
)
# What the runner puts in a result's metadata to say which upstream connection it used.
UPSTREAM_CONNECTION = "upstream_connection_id"


def internal_failure() -> ExecutorResult:
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
    return finish(execution, tool, internal_failure(), max(execution.attempts, 1), 0.0)


def _store_output(
    execution: Execution, tool: Tool, result: ExecutorResult, fields: dict[str, Any]
) -> ExecutorResult:
    """Keep the output (in the row, or as an artifact beyond the tool's cap) into ``fields``;
    the result as it ends: failed with ``storage_error`` when the artifact was not kept."""
    try:
        cut = bool((result.metadata or {}).get("truncated"))
        fields.update(outputs.store_output(execution, tool, result.output, cut=cut))
    except outputs.ArtifactNotStored as exc:
        # The row keeps the preview; the call ends failed now, not at the reaper.
        fields.update(exc.fields)
        return ExecutorResult(
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
    return result


def finish(
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
    connection_id = (result.metadata or {}).pop(UPSTREAM_CONNECTION, None)
    if connection_id is not None:
        fields["upstream_connection_id"] = connection_id
    if decisions:
        fields["guard_decisions"] = [*(execution.guard_decisions or []), *decisions]
    if result.output is not None:
        result = _store_output(execution, tool, result, fields)
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
            task_queue.notify_agent(execution)
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
