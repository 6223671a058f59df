"""Running a tool's guards: before a call on its arguments, after it on its output.

The one place guards run. Admission calls ``run_before`` for every entry point
(REST, the admin's test run, MCP: they all go through ``execution_submit``);
the runner calls ``run_after`` at its boundary for every executor kind, right
where the tool's own secrets are removed. Each guard's decision is recorded
(``decision``: which guard, what it did, where in the output; never the text it
found). A guard that raises, or answers something that is not an answer,
decides against the call: the arguments are refused or the output withheld,
recorded with the guard's name.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from executions.guards.arguments import check_arguments
from executions.guards.budget import GuardBudgetExceeded, check_budget, guard_budget
from executions.guards.findings import Finding, hidden_keys, redacted, texts
from executions.guards.injection import HEURISTIC_NOTE, find_instructions
from executions.guards.pii import find_pii
from executions.guards.registry import registry as functions
from executions.guards.secrets import find_secrets
from executions.guards.types import GuardContext, Violation
from registry.models import GuardAction, GuardKind, GuardStage

__all__ = ["GuardAction", "run_after", "run_before"]

logger = logging.getLogger(__name__)
RECORDED_FINDINGS = 20  # a decision keeps the first places found (and counts them all)
FAILED = "guard_failed"

AFTER_BUILTINS: dict[str, Callable[[Any, dict], list[Finding]]] = {
    GuardKind.PII: find_pii,
    GuardKind.SECRETS: find_secrets,
    GuardKind.INJECTION: find_instructions,
}


class GuardUnavailable(RuntimeError):
    """A python guard whose function is not registered in this process."""


@dataclass
class BeforeOutcome:
    """``action``: allow, deny or require_approval; ``message`` for the agent when denied."""

    action: str = GuardAction.DENY
    message: str = ""
    guard: str = ""
    decisions: list[dict] = field(default_factory=list)


@dataclass
class AfterOutcome:
    """The output as guarded (None when blocked), and what the guards decided."""

    output: Any
    blocked: bool = False
    message: str = ""
    notes: list[str] = field(default_factory=list)
    decisions: list[dict] = field(default_factory=list)


def _context(guard, *, tool, caller: str) -> GuardContext:
    config = guard.config or {}
    options = (config.get("options") or {}) if guard.kind == GuardKind.PYTHON else config
    return GuardContext(
        tool_name=tool.name,
        tool_type=tool.type,
        caller=caller,
        stage=guard.stage,
        guard_name=guard.name,
        options=dict(options),
    )


def _function(guard) -> Callable[..., Any]:
    entry = functions.get((guard.config or {}).get("function", ""))
    if entry is None or entry.stage != guard.stage:
        raise GuardUnavailable(f"guard function {guard.config.get('function')!r} not registered")
    return entry.function


def decision(guard, action: str, **extra: Any) -> dict[str, Any]:
    return {
        "guard": guard.name,
        "guard_id": str(guard.pk),
        "kind": guard.kind,
        "stage": guard.stage,
        "action": action,
        **extra,
    }


def _failure(guard, exc: Exception, action: str) -> dict[str, Any]:
    # The exception's class only: its text may quote an argument or the output.
    logger.warning("guard %s failed: %s", guard.name, exc.__class__.__name__)
    outcome = "the call was refused" if action == GuardAction.DENY else "the output was withheld"
    if isinstance(exc, GuardBudgetExceeded):
        reason = f"did not finish within the guards' time budget of {_budget_seconds():g} s"
    else:
        reason = f"failed ({exc.__class__.__name__})"
    return decision(
        guard, action, error=FAILED, message=f"Guard '{guard.name}' {reason}; {outcome}."
    )


def _budget_seconds() -> float:
    return settings.TOOLHUB_GUARD_BUDGET_SECONDS


# Before the call


def _violation(guard, arguments: dict, context: GuardContext) -> Violation | None:
    if guard.kind == GuardKind.ARGUMENTS:
        return check_arguments(arguments, guard.config or {})
    answer = _function(guard)(arguments, context)
    if answer is None or isinstance(answer, Violation):
        return answer
    if isinstance(answer, str) and answer:
        return Violation(answer)
    raise TypeError(f"a before-guard answers None, a Violation or a message, not {type(answer)}")


def run_before(guards: Iterable, *, tool, arguments: dict, caller: str) -> BeforeOutcome:
    """Run the before-guards in order: the first denial ends it; an approval asked for by
    one guard stands unless a later one denies. Together they have the guards' budget."""
    with guard_budget(_budget_seconds()):
        return _run_before(guards, tool=tool, arguments=arguments, caller=caller)


def _run_before(guards: Iterable, *, tool, arguments: dict, caller: str) -> BeforeOutcome:
    outcome = BeforeOutcome(action=GuardAction.DENY)
    wanted_approval = False
    for guard in guards:
        if guard.stage != GuardStage.BEFORE:
            continue
        try:
            violation = _violation(guard, arguments, _context(guard, tool=tool, caller=caller))
            check_budget()  # a function that returns late fails like one that raises
        except Exception as exc:  # fail closed: a guard that cannot decide denies
            failed = _failure(guard, exc, GuardAction.DENY)
            outcome.decisions.append(failed)
            outcome.message, outcome.guard = failed["message"], guard.name
            return outcome
        if violation is None:
            outcome.decisions.append(decision(guard, "allow"))
            continue
        details = {k: v for k, v in violation.details.items() if k != "message"}
        outcome.decisions.append(
            decision(guard, guard.action, message=violation.message[:500], details=details)
        )
        if guard.action == GuardAction.DENY:
            outcome.message, outcome.guard = violation.message, guard.name
            return outcome
        wanted_approval = True
        outcome.guard = outcome.guard or guard.name
    outcome.action = GuardAction.REQUIRE_APPROVAL if wanted_approval else "allow"
    return outcome


# After the call


def _findings(guard, output: Any, context: GuardContext) -> list[Finding]:
    builtin = AFTER_BUILTINS.get(guard.kind)
    found = (
        builtin(output, guard.config or {})
        if builtin is not None
        else _function(guard)(output, context)
    )
    found = list(found or ())
    if not all(isinstance(f, Finding) for f in found):
        raise TypeError("an after-guard answers Finding objects")
    return found


def _check_places(output: Any, found: list[Finding]) -> None:
    """Every finding must name a text of the output and a span inside it (an operator's
    function may be wrong: redacting the wrong place would leave the real one)."""
    by_path = dict(texts(output))
    for finding in found:
        text = by_path.get(finding.path)
        if text is None or not 0 <= finding.start < finding.end <= len(text):
            raise ValueError("a finding names no text of the output")


def _summary(found: list[Finding]) -> dict[str, Any]:
    hidden = hidden_keys(found)
    return {
        "found": len(found),
        "types": dict(sorted(Counter(f.label for f in found).items())),
        "findings": [f.record(hidden) for f in found[:RECORDED_FINDINGS]],
    }


def _note(guard, found: list[Finding]) -> str:
    if guard.kind == GuardKind.INJECTION:
        return f"Guard '{guard.name}': {HEURISTIC_NOTE}"
    types = ", ".join(sorted({f.label for f in found}))
    return f"Guard '{guard.name}' flagged the output: it contains {types}."


def _apply(guard, outcome: AfterOutcome, found: list[Finding]) -> bool:
    """Act on what ``guard`` found; whether the output was blocked."""
    summary = _summary(found)
    if guard.action == GuardAction.REDACT:
        outcome.output = redacted(outcome.output, found)
        outcome.decisions.append(decision(guard, GuardAction.REDACT, **summary))
        return False
    if guard.action == GuardAction.FLAG:
        note = _note(guard, found)
        outcome.notes.append(note)
        outcome.decisions.append(decision(guard, GuardAction.FLAG, message=note, **summary))
        return False
    types = ", ".join(summary["types"])
    message = f"The output was withheld by guard '{guard.name}': it contained {types}."
    outcome.decisions.append(decision(guard, GuardAction.BLOCK, message=message, **summary))
    outcome.output, outcome.blocked, outcome.message = None, True, message
    return True


def run_after(guards: Iterable, *, tool, caller: str, output: Any) -> AfterOutcome:
    """Run the after-guards in order on ``output``; each sees it as the ones before left it.
    Together they have the guards' budget: the one running when it is spent withholds."""
    with guard_budget(_budget_seconds()):
        return _run_after(guards, tool=tool, caller=caller, output=output)


def _run_after(guards: Iterable, *, tool, caller: str, output: Any) -> AfterOutcome:
    outcome = AfterOutcome(output=output)
    for guard in guards:
        if guard.stage != GuardStage.AFTER:
            continue
        if outcome.output is None:
            outcome.decisions.append(decision(guard, "pass"))
            continue
        try:
            found = _findings(guard, outcome.output, _context(guard, tool=tool, caller=caller))
            if found and guard.kind == GuardKind.PYTHON:
                _check_places(outcome.output, found)
            check_budget()
            if not found:
                outcome.decisions.append(decision(guard, "pass"))
            elif _apply(guard, outcome, found):
                return outcome
        except Exception as exc:  # fail closed: nothing unchecked leaves
            failed = _failure(guard, exc, GuardAction.BLOCK)
            outcome.decisions.append(failed)
            outcome.output, outcome.blocked, outcome.message = None, True, failed["message"]
            return outcome
    return outcome
