"""What the pipeline's own spans say about a call (``toolhub.tracing`` makes the spans).

Names, ids, kinds, statuses and error types only: never argument values, outputs,
error messages (an upstream may quote what it was sent) or secrets.
"""

from __future__ import annotations

from typing import Any

from executions.executors.base import ExecutorResult, ToolCall
from executions.models import Execution

EXECUTION_ID = "toolhub.execution.id"
STATUS = "toolhub.execution.status"


def execution_attributes(execution: Execution) -> dict[str, Any]:
    return {
        EXECUTION_ID: str(execution.pk),
        "toolhub.tool.name": execution.tool_name,
        "toolhub.tool.type": execution.tool_type,
        "toolhub.principal": execution.principal_name,
        STATUS: execution.status,
        # The trace the call was admitted in: another than this one's when a worker runs
        # it after an approval (in the approver's trace).
        "toolhub.execution.trace_id": execution.trace_id,
    }


def outcome_attributes(execution: Execution) -> dict[str, Any]:
    return {
        STATUS: execution.status,
        "toolhub.execution.reason_code": execution.reason_code,
        "toolhub.execution.error_type": execution.error_type,
        "toolhub.execution.attempts": execution.attempts,
        "toolhub.upstream.status_code": execution.upstream_status,
    }


def call_attributes(call: ToolCall) -> dict[str, Any]:
    """The executor's span, with the names of OpenTelemetry's GenAI conventions for a
    tool's execution beside ours."""
    return {
        EXECUTION_ID: call.execution_id,
        "toolhub.tool.name": call.tool_name,
        "toolhub.tool.type": call.tool_type,
        "toolhub.attempt": call.attempt,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.tool_name,
    }


def result_attributes(result: ExecutorResult) -> dict[str, Any]:
    return {
        "toolhub.executor.ok": result.ok,
        "toolhub.executor.error_type": result.error_type,
        "toolhub.executor.retryable": result.retryable if not result.ok else None,
        "toolhub.upstream.status_code": result.upstream_status,
    }
