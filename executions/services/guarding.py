"""After-guards at the runner's boundary: the one place an output is guarded.

Every executor kind's output passes here once, after every secret of the call
is removed from it (``runner.redacting``, the one redaction) and before it is stored,
cached or answered: redacted, withheld (the call fails ``guard_blocked``) or
flagged, with every guard's decision returned for the record.
"""

from __future__ import annotations

from executions.executors.base import ExecutorResult
from executions.guards import engine
from executions.models import Execution

GUARD_BLOCKED = "guard_blocked"


def guarded_result(
    execution: Execution, spec, result: ExecutorResult
) -> tuple[ExecutorResult, list]:
    """``result`` as the tool's after-guards leave it, and their decisions. A failed
    call's error message (an upstream's error body may be quoted there) is guarded too:
    what they do to it is recorded with ``"on": "error_message"``."""
    if not any(g.stage == "after" for g in spec.guards):
        return result, []
    decisions: list[dict] = []
    if result.output is not None:
        outcome = engine.run_after(
            spec.guards, tool=spec.tool, caller=execution.principal_name, output=result.output
        )
        decisions += outcome.decisions
        if outcome.blocked:
            return _blocked(result, outcome.message), decisions
        result.output = outcome.output
    if not result.ok and result.error_message:
        on_error = engine.run_after(
            spec.guards,
            tool=spec.tool,
            caller=execution.principal_name,
            output=result.error_message,
        )
        result.error_message = on_error.message if on_error.blocked else on_error.output
        decisions += [
            {**d, "on": "error_message"} for d in on_error.decisions if d["action"] != "pass"
        ]
    return result, decisions


def _blocked(result: ExecutorResult, message: str) -> ExecutorResult:
    return ExecutorResult(
        ok=False,
        error_type=GUARD_BLOCKED,
        error_message=message,
        upstream_status=result.upstream_status,
        metadata={k: v for k, v in (result.metadata or {}).items() if k != "truncated"},
    )


def may_have_waited(tool, execution: Execution) -> bool:
    """Whether the call may have waited for approval (the tool's setting or a guard's):
    its agent is told the outcome of a call a person decided on."""
    return tool.requires_approval or any(
        d.get("action") == "require_approval" for d in execution.guard_decisions or []
    )
