"""A test helper for operators' guard functions: run one exactly as ToolHub would.

    from executions.guards.testing import check_after, check_before

    outcome = check_after(my_guard, {"note": "call 555-010-9999"}, action="redact")
    assert outcome.output == {"note": "call [REDACTED:phone]"}
    assert check_before(my_rule, {"path": "/etc/passwd"}).action == "deny"

The function need not be registered; a raising function shows the fail-closed
outcome (``deny`` / ``blocked``) the pipeline would record.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from executions.guards import engine
from executions.guards.registry import GuardRegistry

TOOL = SimpleNamespace(name="tool_under_test", type="python")


def _row(function: Callable, stage: str, action: str, options: dict | None) -> SimpleNamespace:
    return SimpleNamespace(
        pk="00000000-0000-0000-0000-000000000000",
        name=getattr(function, "__name__", "guard_under_test"),
        kind="python",
        stage=stage,
        action=action,
        config={"function": getattr(function, "__name__", "guard"), "options": options or {}},
    )


def _run(row, function: Callable, run: Callable[[], Any]) -> Any:
    scratch = GuardRegistry()
    scratch.register(row.config["function"], row.stage, function)
    previous, engine.functions = engine.functions, scratch
    try:
        return run()
    finally:
        engine.functions = previous


def check_before(
    function: Callable,
    arguments: dict,
    *,
    action: str = "deny",
    options: dict | None = None,
    tool=TOOL,
    caller: str = "test-agent",
) -> engine.BeforeOutcome:
    """The outcome of a before-guard ``function`` on ``arguments`` (action deny or require_approval)."""
    row = _row(function, "before", action, options)
    return _run(
        row,
        function,
        lambda: engine.run_before([row], tool=tool, arguments=arguments, caller=caller),
    )


def check_after(
    function: Callable,
    output: Any,
    *,
    action: str = "redact",
    options: dict | None = None,
    tool=TOOL,
    caller: str = "test-agent",
) -> engine.AfterOutcome:
    """The outcome of an after-guard ``function`` on ``output`` (action redact, block or flag)."""
    row = _row(function, "after", action, options)
    return _run(
        row, function, lambda: engine.run_after([row], tool=tool, caller=caller, output=output)
    )
